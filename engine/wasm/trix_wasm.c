/*
 * trix_wasm.c: the rules engine's face in WebAssembly (docs/adr/0025-engine-webassembly.md).
 *
 * The same engine/src files the server links, compiled for wasm32 (`make web`), with this
 * thin layer of exports on top: it holds one game and one exchange buffer (a WebAssembly
 * instance is one verification at a time), converts nothing and decides nothing. Every
 * rule is trix_engine.c's; the callers (web/src/client/engine.ts in the browser,
 * tests/support/wasm_engine.py in the tests) read the state through these functions.
 *
 * Exchange buffer: hands in (52 card ids, seat-major, 13 each), seats / actions /
 * snapshot bytes out. Events are trix_event structs (24 bytes each) at tw_events().
 */
#include "trix_engine.h"

#include <string.h>

#define EXPORT(name) __attribute__((export_name(#name)))

static trix_game G;
static trix_event EV[TRIX_MAX_EVENTS];
static int N_EV;
static int DETAIL;
static uint8_t BUF[TRIX_SNAPSHOT_MAX];

EXPORT(tw_buffer) uint8_t *tw_buffer(void) { return BUF; }
EXPORT(tw_buffer_size) int tw_buffer_size(void) { return (int)sizeof BUF; }
EXPORT(tw_events) const trix_event *tw_events(void) { return EV; }
EXPORT(tw_n_events) int tw_n_events(void) { return N_EV; }
EXPORT(tw_event_size) int tw_event_size(void) { return (int)sizeof(trix_event); }

/* A new game awaiting deal 0, with the options of docs/rules.md §6-§8. */
EXPORT(tw_init)
int tw_init(int variant, int doubling, int reveal, int self_take, int tiebreak, int early_end) {
    trix_options o = trix_default_options();
    o.doubling = (uint8_t)doubling;
    o.doubling_reveal = (uint8_t)reveal;
    o.doubling_self_take = (uint8_t)self_take;
    o.team_tiebreak = (uint8_t)tiebreak;
    o.partnership_trix_early_end = (uint8_t)early_end;
    N_EV = 0;
    return (int)trix_init(&G, variant, &o);
}

/* The next deal's hands from the buffer: BUF[13 * s + i] is seat s's i-th card. */
EXPORT(tw_provide) int tw_provide(void) {
    uint8_t hands[TRIX_SEATS][TRIX_HAND_SIZE];
    memcpy(hands, BUF, sizeof hands);
    return (int)trix_provide_deal(&G, (const uint8_t(*)[TRIX_HAND_SIZE])hands, EV, TRIX_MAX_EVENTS, &N_EV);
}

/* What a refusal is about, for its message: the seat to act (NOT_YOUR_TURN), the suit led
 * (MUST_FOLLOW_SUIT), the card that cannot be doubled (NOT_ELIGIBLE_TO_DOUBLE), else -1. */
static int detail_of(trix_status st, int seat, int action) {
    switch (st) {
    case TRIX_E_NOT_YOUR_TURN: return G.turn;
    case TRIX_E_MUST_FOLLOW_SUIT: return TRIX_SUIT_OF(G.trick_cards[0]);
    case TRIX_E_NOT_ELIGIBLE_TO_DOUBLE: {
        int mask = action - TRIX_ACTION_DOUBLE_BASE;
        int bad = mask & ~trix_contract_doubles(G.contract);
        if (!bad) bad = mask & ~trix_eligible_doubles(&G, seat);
        int card = -1;
        for (int b = 0; b < 5; b++)
            if ((bad & (1 << b)) && (card < 0 || trix_double_bit_card(b) < card)) card = trix_double_bit_card(b);
        return card;
    }
    default: return -1;
    }
}

/* trix_apply: the status (0 = applied, events at tw_events); on a refusal the game is unchanged. */
EXPORT(tw_apply) int tw_apply(int seat, int action) {
    N_EV = 0;
    trix_status st = trix_apply(&G, seat, action, EV, TRIX_MAX_EVENTS, &N_EV);
    DETAIL = st == TRIX_OK ? -1 : detail_of(st, seat, action);
    return (int)st;
}

EXPORT(tw_detail) int tw_detail(void) { return DETAIL; }

EXPORT(tw_leave) int tw_leave(int seat) {
    N_EV = 0;
    return (int)trix_leave(&G, seat, EV, TRIX_MAX_EVENTS, &N_EV);
}

EXPORT(tw_variant) int tw_variant(void) { return G.variant; }
EXPORT(tw_phase) int tw_phase(void) { return G.phase; }
EXPORT(tw_deal_index) int tw_deal_index(void) { return G.deal_index; }
EXPORT(tw_num_deals) int tw_num_deals(void) { return G.num_deals; }
EXPORT(tw_owner) int tw_owner(void) { return G.owner == TRIX_NO_SEAT ? -1 : G.owner; }
EXPORT(tw_contract) int tw_contract(void) { return G.contract == TRIX_NO_CONTRACT ? -1 : G.contract; }
EXPORT(tw_total) int tw_total(int seat) { return G.totals[seat & 3]; }
EXPORT(tw_score) int tw_score(int seat) { return G.scores[seat & 3]; }
/* A seat's place once the game is over, 0 before. */
EXPORT(tw_rank) int tw_rank(int seat) { return G.phase == TRIX_PHASE_GAME_OVER ? G.ranking[seat & 3] : 0; }
EXPORT(tw_eligible_doubles) int tw_eligible_doubles(int seat) { return trix_eligible_doubles(&G, seat); }
EXPORT(tw_contract_doubles) int tw_contract_doubles(int contract) { return trix_contract_doubles(contract); }

/* Seats that may act now into the buffer; returns their count. */
EXPORT(tw_to_act) int tw_to_act(void) { return trix_to_act(&G, BUF); }

/* A seat's legal actions into the buffer (ascending); returns their count. */
EXPORT(tw_legal_actions) int tw_legal_actions(int seat) {
    uint8_t out[TRIX_MAX_ACTIONS];
    int n = trix_legal_actions(&G, seat, out);
    memcpy(BUF, out, (size_t)n);
    return n;
}

/* The game's snapshot bytes into the buffer: their length, or -status. */
EXPORT(tw_snapshot) int tw_snapshot(void) {
    size_t len = 0;
    trix_status st = trix_snapshot(&G, BUF, sizeof BUF, &len);
    return st == TRIX_OK ? (int)len : -(int)st;
}

/* The game from `len` snapshot bytes in the buffer (trix_restore replays them all). */
EXPORT(tw_restore) int tw_restore(int len) {
    if (len < 0 || (size_t)len > sizeof BUF) return (int)TRIX_E_BAD_ARGUMENT;
    uint8_t copy[TRIX_SNAPSHOT_MAX];
    memcpy(copy, BUF, (size_t)len);
    return (int)trix_restore(&G, copy, (size_t)len);
}

/* A whole game played inside the engine from the current state (decks dealt by its PRNG). */
EXPORT(tw_playout) int tw_playout(uint32_t seed_low, uint32_t seed_high, int policy) {
    uint8_t pol[TRIX_SEATS] = {(uint8_t)policy, (uint8_t)policy, (uint8_t)policy, (uint8_t)policy};
    uint32_t moves = 0;
    trix_status st = trix_playout(&G, pol, ((uint64_t)seed_high << 32) | seed_low, &moves);
    return st == TRIX_OK ? (int)moves : -(int)st;
}
