"""Issue 18, finding 3: `trix up` runs NATS with the production users and permissions, the
passwords generated once per state folder in files only their owner may read, each
service given its own user's URL only."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from support.up import inspected_supervisor
from trix.declarations import service_token_callers, signers
from trix.natsio import permissions
from trix.runtime.identity import SERVICE_KEY_ENV, public_key_env, public_key_of
from trix.scoring.config import SCORING_ADMIN_ENV
from trix.state_folder import NATS_USERS_FILE, SIGNING_KEYS_FILE, nats_passwords, signing_keys


def test_passwords_are_generated_once_per_state_folder_and_readable_only_by_their_owner(tmp_path: Path) -> None:
    first = nats_passwords(tmp_path)
    assert set(first) == set(permissions.USERS) and len(set(first.values())) == len(first)
    assert all(len(p) >= 24 for p in first.values())
    assert stat.S_IMODE((tmp_path / NATS_USERS_FILE).stat().st_mode) == 0o600
    assert nats_passwords(tmp_path) == first  # kept across restarts of `trix up`
    (tmp_path / "other").mkdir()
    assert nats_passwords(tmp_path / "other") != first


def test_trix_up_writes_the_generated_permissions_and_gives_each_service_only_its_own_user(tmp_path: Path) -> None:
    sup = inspected_supervisor(tmp_path)
    sup.prepare()
    child = sup.nats_node_child(sup.nats_nodes[0])
    conf = tmp_path / "nats.conf"
    assert stat.S_IMODE(conf.stat().st_mode) == 0o600
    assert permissions.authorization_block(sup.passwords) in conf.read_text()
    services = sup.service_children()
    assert child.argv[-1] == str(conf)
    for svc in services:
        url = svc.env["TRIX_NATS_URL"]
        assert permissions.user_of(url) == svc.name
        others = [p for u, p in sup.passwords.items() if u != svc.name]
        assert not any(p in " ".join(svc.env.values()) for p in others), svc.name
    provisioner = sup.provisioner_child()
    assert permissions.user_of(provisioner.env["TRIX_NATS_URL"]) == permissions.PROVISIONER


def test_trix_up_gives_the_scoring_admin_token_to_scoring_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 42, finding 6: the operators' credential (it grants coins) reaches scoring alone,
    as deploy/k8s gives it, not every service through the environment `trix up` passes on."""
    admin = "an-operators-credential-of-issue-42"
    monkeypatch.setenv(SCORING_ADMIN_ENV, admin)
    sup = inspected_supervisor(tmp_path)
    sup.prepare()
    children = {c.name: c for c in sup.service_children()}
    holders = sorted(name for name, c in children.items() if admin in " ".join(c.env.values()))
    assert holders == ["scoring"]
    assert children["scoring"].env[SCORING_ADMIN_ENV] == admin
    assert admin not in " ".join(sup.provisioner_child().env.values())


def test_trix_up_gives_each_service_only_its_own_private_key(tmp_path: Path) -> None:
    """Issue 42, finding 4 (ADR 0028): each signer's private key is generated once per state
    folder (mode 0600); a service that signs gets its own and no other (scoring none, the
    operators' to no service), and the public keys of the signers it accepts, exactly."""
    sup = inspected_supervisor(tmp_path)
    sup.prepare()
    private = sup.signing_keys
    assert set(private) == set(signers()) == {"table", "timers", "matchmaking", "competitions", "admin"}
    assert len(set(private.values())) == len(private)
    assert stat.S_IMODE((tmp_path / SIGNING_KEYS_FILE).stat().st_mode) == 0o600
    assert signing_keys(tmp_path, signers()) == private  # kept across restarts of `trix up`
    children = sup.service_children()
    for child in children:
        given = " ".join(child.env.values())
        holds = sorted(signer for signer, key in private.items() if key in given)
        assert holds == ([child.service] if child.service in private else []), child.name
        if holds:
            assert child.env[SERVICE_KEY_ENV] == private[child.service]
        else:
            assert SERVICE_KEY_ENV not in child.env, child.name
        publics = sorted(k for k in child.env if k.endswith("_PUBLIC_KEY"))
        accepted = service_token_callers(child.service)
        assert publics == sorted(map(public_key_env, accepted)), child.name
        assert all(child.env[public_key_env(s)] == public_key_of(private[s]) for s in accepted)
    assert {c.name: c.env.get(SERVICE_KEY_ENV) is not None for c in children if c.service == "scoring"} == {
        "scoring": False
    }
    assert not any(private["admin"] in " ".join(c.env.values()) for c in children)
    assert not any(key in " ".join(sup.provisioner_child().env.values()) for key in private.values())
