"""Build the C engine extension `trix.engine._core` (the rules of docs/rules.md, implemented in engine/src)."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "trix.engine._core",
            sources=[
                "engine/binding/_core.c",
                "engine/src/trix_engine.c",
                "engine/src/trix_bot.c",
            ],
            include_dirs=["engine/include"],
            extra_compile_args=["-std=c11", "-O3", "-funroll-loops", "-Wall", "-Wextra", "-Werror"],
        )
    ],
)
