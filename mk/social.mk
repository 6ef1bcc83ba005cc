# Friends and chat (issue 44). Included by the top Makefile.
.PHONY: test-social

test-social: $(STAMP_DEV) ## friends and chat: the filter, limits and block rules, then through the real gateway (real nats-server, gRPC, the social service): friends online (offline once their gateway is killed), an invite by link, table chat, blocks, spectators, a flood, partners' free text
	$(PY) -m pytest -q --timeout=300 -p no:cacheprovider tests/social $(PYTEST_ARGS)
