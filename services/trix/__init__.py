"""Trix (تركس) platform: one import namespace for the engine binding, tools and services."""
