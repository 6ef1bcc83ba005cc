# Containers (issue 41): the image of deploy/Dockerfile built with podman, and the translation
# of deploy/k8s for `podman kube play` (trix.kubeplay, tested in CI by tests/deploy/test_kubeplay.py).
# These targets need podman and runc (Debian: apt-get install podman runc debootstrap) and are
# outside CI; docs/deploy.md gives their run time. Nothing here runs when podman is absent.
PODMAN_IMAGES := deploy/podman/images.sh
IMAGE ?= ghcr.io/trix-platform/trix:0.1.0-dev

.PHONY: base-images image

base-images: ## Debian base images for deploy/Dockerfile without a registry (debootstrap + podman import, Node from PyPI; root, ~2 min)
	$(PODMAN_IMAGES) base-images

# The web stage copies web/ with web/build: the engine as WebAssembly and the Arabic font subset
# are made here first (zig and fonttools are dev tools, not in the Node image).
image: web/build/trix_engine.wasm web/build/noto-sans-arabic-400.woff2 ## build deploy/Dockerfile with podman on the local bases (`make base-images` first; ~2 min); prints size, digest and user
	IMAGE=$(IMAGE) $(PODMAN_IMAGES) image

.PHONY: up-containers down-containers test-containers

up-containers: $(STAMP_DEV) ## the platform as podman pods from deploy/k8s/overlays/dev (trix.kubeplay): 3 NATS, provisioning, services, Envoy and web; prints the edge URL
	$(PY) deploy/k8s/overlays/dev/generate_secrets.py
	$(PY) -m trix.containers up $(CONTAINERS_ARGS)

down-containers: $(STAMP_DEV) ## remove exactly what `make up-containers` made (its .state/containers/made.json)
	$(PY) -m trix.containers down

test-containers: $(STAMP_DEV) ## image, up-containers, trix demo, a 200-table load test with a NATS pod and a table pod killed, every accepted move in the log, down-containers leaving nothing (root, ~7 min; outside CI); last line: one JSON summary
	@PYTHONPATH=services $(PY) tests/containers/containers_run.py $(TEST_CONTAINERS_ARGS)
