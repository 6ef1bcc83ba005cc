"""TableCommand <-> TableService: the one translation of the command protocol.

Owns `handle_command`: decodes a `trix.v1.TableCommand` (as it arrives on the table's
NATS subject, or forwarded by the gRPC API), checks the caller's token, calls the
matching `TableService` method and encodes the `TableCommandReply`. Domain errors
travel as `CommandError{kind, message}` (`trix.errors.error_kind`); NATS not answering
(a reconnect, a stream electing its leader: `trix.natsio.publish.RETRYABLE`) is `Unavailable`,
retried by the caller with the same action id; anything else unexpected becomes an `Internal`
error with an id logged once, never its text. No grpc or nats imports.
"""

from __future__ import annotations

import time
import uuid

import structlog

from trix.errors import DomainError, InvalidArgument, Unavailable, error_kind
from trix.natsio.publish import RETRYABLE
from trix.natsio.subjects import token as subject_token
from trix.table.service import ANNOUNCED, ActionHeader, TableService
from trix.table.validation import action_from
from trix.v1 import table_pb2

log = structlog.get_logger("trix.table.codec")

INTERNAL_KIND = "Internal"


def _header(h: table_pb2.ActionHeader) -> ActionHeader:
    return ActionHeader(h.table_id, h.seat, h.action_id, h.last_seen_sequence)


async def dispatch(
    service: TableService, command: table_pb2.TableCommand, token: str | None
) -> table_pb2.TableCommandReply:
    """Run one command; domain errors propagate."""
    caller = service.tokens.verify(token, time.time())
    which = command.WhichOneof("command")
    reply = table_pb2.TableCommandReply()
    if which == "create_table":
        created = await service.create_table(caller, command.create_table)
        reply.sequence = created.sequence
        reply.create_table.CopyFrom(created)
    elif which == "get_seat_view":
        await service.ensure_loaded(subject_token(command.get_seat_view.table_id, "table id"))
        ask = command.get_seat_view
        view = service.seat_view(caller, ask.table_id, ask.seat, ask.invitation)
        reply.sequence = view.sequence
        reply.get_seat_view.view.CopyFrom(view)
    elif which == "read_events":
        read = command.read_events
        events, sequence = await service.read_events(
            caller, read.table_id, read.seat, read.after_sequence, read.limit, read.invitation
        )
        reply.sequence = sequence
        reply.read_events.sequence = sequence
        reply.read_events.events.extend(events)
    elif which == "set_client_seed":
        seed = command.set_client_seed
        reply.sequence = await service.set_client_seed(caller, _header(seed.header), seed.client_seed)
    elif which == "choose_contract":
        choose = command.choose_contract
        reply.sequence = await service.act(caller, _header(choose.header), action_from("contract", choose.contract))
    elif which == "answer_double":
        answer = command.answer_double
        action = action_from("double", [card.id for card in answer.cards])
        reply.sequence = await service.act(caller, _header(answer.header), action)
    elif which == "play_card":
        play = command.play_card
        reply.sequence = await service.act(caller, _header(play.header), action_from("card", play.card.id))
    elif which == "leave_table":
        leave = command.leave_table
        reply.sequence = await service.leave(caller, _header(leave.header), int(leave.reason))
    elif which == "reclaim_seat":
        reply.sequence = await service.reclaim(caller, _header(command.reclaim_seat.header))
    elif which == "hand_over_seat":
        reply.sequence = await service.hand_over(caller, _header(command.hand_over_seat.header))
    elif which == "auto_act":
        auto = command.auto_act
        reply.sequence = await service.auto_act(caller, auto.table_id, auto.seat, auto.turn_seq)
    else:
        raise InvalidArgument("empty command")
    return reply


async def handle_command(service: TableService, data: bytes, token: str | None, *, quiet: bool = False) -> bytes | None:
    """Bytes in, bytes out: never raises. `quiet` (the caller follows the table's feed,
    `ACCEPTED_BY_CAUSE_HEADER`): a seat action this command freshly accepted and
    announced in its feed batch's `cause` gets no reply (None); errors, repeats
    and everything else are answered."""
    reply = table_pb2.TableCommandReply()
    announced: list[str] = []
    scope = ANNOUNCED.set(announced)
    try:
        command = table_pb2.TableCommand.FromString(data)
        reply = await dispatch(service, command, token)
    except DomainError as err:
        reply.error.kind = error_kind(err)
        reply.error.message = err.public_message
    except RETRYABLE as exc:
        # Not a bug: NATS did not answer in time. A retry with the same action id
        # applies it once: answered with its first result if it was stored meanwhile.
        log.warning("nats did not answer", error=type(exc).__name__)
        unavailable = Unavailable("the table's storage is briefly unavailable; retry with the same action id")
        reply.error.kind = error_kind(unavailable)
        reply.error.message = unavailable.public_message
    except Exception as exc:
        error_id = uuid.uuid4().hex[:16]
        log.error("unexpected error", error_id=error_id, exc_info=exc)
        reply.error.kind = INTERNAL_KIND
        reply.error.message = f"internal error (error id {error_id})"
    finally:
        ANNOUNCED.reset(scope)
    if quiet and announced and not reply.HasField("error"):
        service.announced_only += 1
        return None
    return reply.SerializeToString()
