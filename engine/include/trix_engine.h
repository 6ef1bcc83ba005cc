/*
 * trix_engine.h: the one public header of the Trix rules engine (docs/rules.md).
 *
 * Plain C11. The caller owns a fixed-size `trix_game`; the engine never
 * allocates, keeps no globals, does no I/O and never aborts on user input:
 * every fallible call returns a `trix_status`. The Python binding
 * (engine/binding/_core.c) and the bot (engine/src/trix_bot.c) are written
 * against this header only. docs/engine-api.md is the Python contract; the
 * numbers below (actions, events, phases, contracts) are the same numbers.
 *
 * Readers of `trix_game` (the bot, the binding) may read any field directly
 * but must change the state only through the functions below.
 */
#ifndef TRIX_ENGINE_H
#define TRIX_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- sizes (docs/rules.md §1-§3, §12) ---------------------------------------- */
enum {
    TRIX_SEATS = 4,
    TRIX_CARDS = 52,
    TRIX_HAND_SIZE = 13,
    TRIX_SUITS = 4,
    TRIX_RANKS = 13,
    TRIX_KINGDOMS = 4,
    TRIX_MAX_DEALS = 20,     /* TRIX variants: 4 kingdoms x 5 contracts */
    TRIX_MAX_ANSWERS = 4,    /* §7: every seat answers once */
    TRIX_MAX_ACTIONS = 32,   /* a legal-action list never exceeds this */
    TRIX_MAX_EVENTS = 24,    /* one apply/leave/provide_deal never emits more */
    TRIX_SNAPSHOT_MAX = 4096 /* upper bound of trix_snapshot's output */
};

#define TRIX_NO_SEAT ((uint8_t)0xFF)
#define TRIX_NO_CONTRACT ((uint8_t)0xFF)
#define TRIX_NO_RANK ((uint8_t)0xFF)

/* Cards (§1): id = suit * 13 + (rank - 2); rank index r = rank - 2 (0..12). */
enum { TRIX_SUIT_C = 0, TRIX_SUIT_D = 1, TRIX_SUIT_H = 2, TRIX_SUIT_S = 3 };
#define TRIX_CARD(suit, rank_index) ((suit) * 13 + (rank_index))
#define TRIX_SUIT_OF(card) ((card) / 13)
#define TRIX_RANK_OF(card) ((card) % 13) /* 0 = two .. 12 = ace */
#define TRIX_BIT(card) (UINT64_C(1) << (card))
#define TRIX_SUIT_MASK(suit) (UINT64_C(0x1FFF) << (13 * (suit)))

enum {
    TRIX_CARD_QC = 10, /* 0*13 + 10 */
    TRIX_CARD_QD = 23,
    TRIX_CARD_JH = 35,
    TRIX_CARD_QH = 36,
    TRIX_CARD_KH = 37,
    TRIX_CARD_7H = 31, /* §3: its holder in the first deal owns kingdom 0 */
    TRIX_CARD_QS = 49
};
#define TRIX_QUEENS_MASK                                                         \
    (TRIX_BIT(TRIX_CARD_QC) | TRIX_BIT(TRIX_CARD_QD) | TRIX_BIT(TRIX_CARD_QH) | \
     TRIX_BIT(TRIX_CARD_QS))
#define TRIX_DIAMONDS_MASK TRIX_SUIT_MASK(TRIX_SUIT_D)
#define TRIX_ALL_CARDS ((UINT64_C(1) << 52) - 1)

/* ---- enums shared with Python (docs/engine-api.md) ------------------------ */
typedef enum {
    TRIX_VARIANT_TRIX = 0,
    TRIX_VARIANT_TRIX_PARTNERSHIP = 1,
    TRIX_VARIANT_COMPLEX = 2,
    TRIX_VARIANT_COMPLEX_PARTNERSHIP = 3
} trix_variant;

typedef enum {
    TRIX_KING = 0,
    TRIX_QUEENS = 1,
    TRIX_DIAMONDS = 2,
    TRIX_TRICKS = 3,
    TRIX_TRIX = 4,
    TRIX_COMPLEX = 5,
    TRIX_NUM_CONTRACTS = 6
} trix_contract;

typedef enum { TRIX_REVEAL_SEQUENTIAL = 0, TRIX_REVEAL_SIMULTANEOUS = 1 } trix_reveal;
typedef enum { TRIX_SELF_TAKE_NOBODY = 0, TRIX_SELF_TAKE_LEADER = 1 } trix_self_take;
typedef enum { TRIX_TIEBREAK_LAST_TRIX = 0, TRIX_TIEBREAK_SHARED = 1 } trix_team_tiebreak;

typedef enum {
    TRIX_PHASE_CHOOSE_CONTRACT = 0,
    TRIX_PHASE_DOUBLING = 1,
    TRIX_PHASE_PLAY = 2,
    TRIX_PHASE_AWAITING_DEAL = 3,
    TRIX_PHASE_GAME_OVER = 4
} trix_phase;

/* Status codes. 1..12 are the IllegalReason codes of docs/engine-api.md, in
 * the order listed there; 13.. are C-level errors of the caller. */
typedef enum {
    TRIX_OK = 0,
    TRIX_E_NOT_YOUR_TURN = 1,
    TRIX_E_WRONG_PHASE = 2,
    TRIX_E_NOT_IN_HAND = 3,
    TRIX_E_MUST_FOLLOW_SUIT = 4,
    TRIX_E_NOT_PLAYABLE_ON_LAYOUT = 5,
    TRIX_E_CONTRACT_ALREADY_PLAYED = 6,
    TRIX_E_CONTRACT_NOT_IN_VARIANT = 7,
    TRIX_E_NOT_ELIGIBLE_TO_DOUBLE = 8,
    TRIX_E_ALREADY_ANSWERED = 9,
    TRIX_E_GAME_OVER = 10,
    TRIX_E_BAD_ACTION = 11,
    TRIX_E_BAD_SEAT = 12,
    TRIX_E_BAD_DECK = 13,     /* hands are not a partition of 0..51, 13 each */
    TRIX_E_CORRUPT = 14,      /* snapshot bytes rejected by trix_restore */
    TRIX_E_BUFFER = 15,       /* caller buffer too small */
    TRIX_E_BAD_ARGUMENT = 16, /* variant/option/policy/pointer out of range */
    TRIX_E_DEAL_HAS_ENDED = 17 /* WRONG_PHASE detail: a card after the deal ended */
} trix_status;

/* ---- actions (docs/engine-api.md "Actions: one int each") ----------------- */
enum {
    TRIX_ACTION_CHOOSE_BASE = 52,  /* 52 + contract */
    TRIX_ACTION_DOUBLE_BASE = 64,  /* 64 + mask */
    TRIX_ACTION_NO_DOUBLE = 64,
    TRIX_ACTION_LIMIT = 96         /* actions are 0 .. 95 */
};
/* Doubling mask bits (§7): bit0 QC, bit1 QD, bit2 QH, bit3 QS, bit4 KH. */
enum {
    TRIX_DBL_QC = 1,
    TRIX_DBL_QD = 2,
    TRIX_DBL_QH = 4,
    TRIX_DBL_QS = 8,
    TRIX_DBL_KH = 16,
    TRIX_DBL_ALL = 31
};

/* ---- events ---------------------------------------------------------------
 * Field use per kind (Python tuple in docs/engine-api.md):
 *   DEAL_STARTED     seat=owner a=deal_index b=kingdom
 *   CONTRACT_CHOSEN  seat, a=contract
 *   DOUBLE_ANSWERED  seat, a=mask (TRIX_DBL_* bits)
 *   DOUBLES_REVEALED r[s]=mask of seat s
 *   CARD_PLAYED      seat, a=card
 *   TRICK_TAKEN      seat=winner, a=trick_index, v[4]=points of this trick
 *   SEAT_PASSED      seat
 *   SEAT_OUT         seat, a=place (1..4), v[0]=points
 *   DEAL_SCORED      a=deal_index, v[4]=scores
 *   GAME_ENDED       v[4]=totals, r[4]=ranking
 *   SEAT_LEFT        seat
 */
typedef enum {
    TRIX_EV_DEAL_STARTED = 0,
    TRIX_EV_CONTRACT_CHOSEN = 1,
    TRIX_EV_DOUBLE_ANSWERED = 2,
    TRIX_EV_DOUBLES_REVEALED = 3,
    TRIX_EV_CARD_PLAYED = 4,
    TRIX_EV_TRICK_TAKEN = 5,
    TRIX_EV_SEAT_PASSED = 6,
    TRIX_EV_SEAT_OUT = 7,
    TRIX_EV_DEAL_SCORED = 8,
    TRIX_EV_GAME_ENDED = 9,
    TRIX_EV_SEAT_LEFT = 10
} trix_event_kind;

typedef struct {
    uint8_t kind;
    uint8_t seat;
    uint8_t a;
    uint8_t b;
    uint8_t r[4];
    int32_t v[4];
} trix_event;

/* ---- options (docs/rules.md section per field) --------------------------------- */
typedef struct {
    uint8_t doubling;                   /* §7 on/off, default 1 */
    uint8_t doubling_reveal;            /* §7 trix_reveal, default SEQUENTIAL */
    uint8_t doubling_self_take;         /* §7 trix_self_take, default NOBODY */
    uint8_t team_tiebreak;              /* §8 trix_team_tiebreak, default LAST_TRIX */
    uint8_t partnership_trix_early_end; /* §6 partnership only, default 1 */
} trix_options;

/* ---- per-deal history, for docs/rules.md §12 records --------------------------- */
typedef struct {
    uint8_t owner;
    uint8_t contract;                        /* TRIX_NO_CONTRACT until chosen */
    uint8_t n_answers;                       /* doubling answers, in order given */
    uint8_t answer_seat[TRIX_MAX_ANSWERS];
    uint8_t answer_mask[TRIX_MAX_ANSWERS];
    uint8_t n_plays;                         /* placed cards, in order */
    uint8_t plays[TRIX_CARDS];               /* seat = holder in the deal's deck */
    uint8_t scored;                          /* 1 once DEAL_SCORED */
    int32_t scores[TRIX_SEATS];              /* valid when scored */
} trix_deal_record;

/* ---- the game state: fixed size, plain data, memcpy-able ------------------ */
typedef struct trix_game {
    /* table */
    uint8_t variant;          /* trix_variant */
    trix_options opt;
    uint8_t num_deals;        /* 20 (TRIX variants) or 8 (COMPLEX variants) */
    uint8_t deals_per_kingdom;/* 5 or 2 */
    uint32_t deck_present;    /* bit d: deck of deal d supplied */
    uint64_t deck[TRIX_MAX_DEALS][TRIX_SEATS]; /* initial hands per deal, as masks */

    /* where we are */
    uint8_t phase;            /* trix_phase */
    uint8_t deal_index;       /* deal being played or awaited */
    uint8_t kingdom;          /* deal_index / deals_per_kingdom */
    uint8_t first_owner;      /* §3: 7H holder of deal 0 (TRIX_NO_SEAT before) */
    uint8_t owner;            /* owner of the current kingdom */
    uint8_t contract;         /* TRIX_NO_CONTRACT until chosen */
    uint8_t played_contracts; /* bit c: contract c played in this kingdom */
    uint8_t turn;             /* seat to act (CHOOSE, PLAY, SEQUENTIAL doubling) */
    uint64_t hand[TRIX_SEATS];/* current hands */
    uint64_t played;          /* cards placed this deal */

    /* doubling (§7) */
    uint8_t answered;         /* bit s: seat s has answered */
    uint8_t n_answered;
    uint8_t answer_mask[TRIX_SEATS];
    uint8_t doubler[5];       /* per TRIX_DBL bit index: doubling seat or NO_SEAT */

    /* trick play (§4, §5) */
    uint8_t trick_leader;
    uint8_t trick_len;
    uint8_t trick_index;      /* 0..12 */
    uint8_t trick_cards[TRIX_SEATS]; /* in play order, from the leader */
    uint8_t tricks_taken[TRIX_SEATS];
    uint8_t queens_taken;
    uint8_t diamonds_taken;
    uint8_t king_taken;

    /* layout (§6): rank indices, TRIX_NO_RANK while the row's jack is out */
    uint8_t row_low[TRIX_SUITS];
    uint8_t row_high[TRIX_SUITS];
    uint8_t n_out;
    uint8_t out[TRIX_SEATS];  /* seats out, in place order */
    uint64_t layout_next;     /* cards playable on the layout now (any hand) */

    /* points (§5-§8, §10) */
    int32_t scores[TRIX_SEATS]; /* current deal so far */
    int32_t totals[TRIX_SEATS]; /* finished deals */
    uint8_t ranking[TRIX_SEATS];/* 0 until GAME_OVER */
    uint8_t left;               /* §10 seat that left, or NO_SEAT */
    uint8_t last_trix_first_out;/* §8 LAST_TRIX tiebreak, NO_SEAT if none yet */

    /* record (§12) */
    uint8_t n_deals_started;
    trix_deal_record hist[TRIX_MAX_DEALS];
} trix_game;

/* ---- API ------------------------------------------------------------------ */

/* Default options (§6-§8). */
trix_options trix_default_options(void);

/* A fresh game awaiting deal 0 (phase AWAITING_DEAL). */
trix_status trix_init(trix_game *g, int variant, const trix_options *opt);

/* Supply a deck: hands[s][0..12] are seat s's cards. It goes to the first
 * deal without a deck; if the game was awaiting that deal, the deal starts
 * (DEAL_STARTED into `ev`, which then needs TRIX_MAX_EVENTS entries, else
 * TRIX_E_BUFFER). TRIX_E_BAD_DECK if the hands are not 4 x 13 partitioning
 * 0..51; TRIX_E_BAD_ARGUMENT if every deal already has its deck. */
trix_status trix_provide_deal(trix_game *g, const uint8_t hands[TRIX_SEATS][TRIX_HAND_SIZE],
                              trix_event *ev, int cap, int *n_ev);
/* Same with masks (one uint64 per seat). */
trix_status trix_provide_deal_masks(trix_game *g, const uint64_t hands[TRIX_SEATS],
                                    trix_event *ev, int cap, int *n_ev);

/* Seats that may act now; returns the count (0..4), seats in `out`. */
int trix_to_act(const trix_game *g, uint8_t out[TRIX_SEATS]);

/* Legal actions for `seat`, sorted ascending; returns the count (0 when the
 * seat need not act or is out of range). `out` needs TRIX_MAX_ACTIONS. */
int trix_legal_actions(const trix_game *g, int seat, uint8_t out[TRIX_MAX_ACTIONS]);

/* Legal cards for `seat` in PLAY (0 otherwise): a bitmask of card ids. */
uint64_t trix_legal_cards(const trix_game *g, int seat);

/* Would `action` by `seat` be legal? No change to `g`. */
trix_status trix_check(const trix_game *g, int seat, int action);

/* Check, then apply. On an error status `g` is unchanged. `cap` must be at
 * least TRIX_MAX_EVENTS. */
trix_status trix_apply(trix_game *g, int seat, int action, trix_event *ev, int cap, int *n_ev);

/* §10: `seat` leaves a paid table for good: the game ends at once. */
trix_status trix_leave(trix_game *g, int seat, trix_event *ev, int cap, int *n_ev);

/* Versioned bytes (magic, version, length, CRC-32). Bit-exact round trip. */
trix_status trix_snapshot(const trix_game *g, uint8_t *buf, size_t cap, size_t *len);
/* Validates everything (it replays the stored history through trix_apply);
 * on error `g` is left as an initialised-but-empty game. */
trix_status trix_restore(trix_game *g, const uint8_t *buf, size_t len);

/* Playouts (whole game inside C). Missing decks are dealt by the PRNG. */
typedef enum { TRIX_POLICY_RANDOM = 0, TRIX_POLICY_LOWEST = 1, TRIX_POLICY_BOT = 2 } trix_policy;
trix_status trix_playout(trix_game *g, const uint8_t policies[TRIX_SEATS], uint64_t seed,
                         uint32_t *moves);

/* Is `seat` on the given team etc. */
static inline int trix_next(int seat) { return (seat + 1) & 3; }
static inline int trix_partner(int seat) { return (seat + 2) & 3; }
static inline int trix_is_partnership(int variant) {
    return variant == TRIX_VARIANT_TRIX_PARTNERSHIP || variant == TRIX_VARIANT_COMPLEX_PARTNERSHIP;
}

/* Doubling: card of a TRIX_DBL bit index (0..4) and the reverse (-1 if none). */
int trix_double_bit_card(int bit);
int trix_card_double_bit(int card);
/* Mask (TRIX_DBL_*) of the cards a contract lets be doubled (§7; 0 if none). */
uint8_t trix_contract_doubles(int contract);
/* Mask (TRIX_DBL_*) of the cards `seat` may double in the current deal. */
uint8_t trix_eligible_doubles(const trix_game *g, int seat);

/* Fast PRNG (splitmix64), shared by playouts and the bot. */
static inline uint64_t trix_rng_next(uint64_t *state) {
    uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}
/* Uniform in [0, n), n >= 1 (Lemire's multiply-shift; tiny bias is fine here). */
static inline uint32_t trix_rng_below(uint64_t *state, uint32_t n) {
    return (uint32_t)(((trix_rng_next(state) >> 32) * (uint64_t)n) >> 32);
}

/* The heuristic bot (engine/src/trix_bot.c): a legal action for `seat`, or -1
 * if the seat has nothing to do. Reads only what `seat` may see (§14). */
int trix_bot_action(const trix_game *g, int seat, uint64_t *rng_state);

#ifdef __cplusplus
}
#endif
#endif /* TRIX_ENGINE_H */
