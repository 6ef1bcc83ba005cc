/*
 * trix_engine.c: the rules of Trix (docs/rules.md §1-§8, §10, §12, §14).
 *
 * Owns the game state machine: deals, kingdoms, contract choice, doubling,
 * trick play, the TRIX layout, scoring, ranking, leaving, snapshots and
 * whole-game playouts. Must not allocate, keep globals, do I/O or abort:
 * every input is checked first (trix_check) and only then applied.
 */
#include "trix_engine.h"

#include <string.h>

/* ---- rule constants -------------------------------------------------------- */

/* §5 penalties, to the seat that takes the trick. */
enum {
    KING_OF_HEARTS_PENALTY = -75,
    QUEEN_PENALTY = -25,
    DIAMOND_PENALTY = -10,
    TRICK_PENALTY = -15
};
/* §7 value v of a doubled card: the taker loses v more, the doubler gains v. */
enum { KING_OF_HEARTS_DOUBLE_VALUE = 75, QUEEN_DOUBLE_VALUE = 25 };
/* §6 points by place: first out +200, second +150, third +100, last +50. */
static const int32_t TRIX_PLACE_POINTS[TRIX_SEATS] = {200, 150, 100, 50};
/* §2 deals per kingdom: one per contract of the variant. */
enum { TRIX_DEALS_PER_KINGDOM = 5, COMPLEX_DEALS_PER_KINGDOM = 2 };
/* §6 the jack starts a row: rank index of J. */
enum { JACK_RANK_INDEX = 9, ACE_RANK_INDEX = 12 };
/* §4 a deal has 13 tricks at most. */
enum { TRICKS_PER_DEAL = 13, QUEENS_IN_DECK = 4, DIAMONDS_IN_DECK = 13 };

/* §7 doubling bits, in mask-bit order (bit0 QC .. bit4 KH). */
static const uint8_t DOUBLE_BIT_CARDS[5] = {TRIX_CARD_QC, TRIX_CARD_QD, TRIX_CARD_QH,
                                            TRIX_CARD_QS, TRIX_CARD_KH};

/* §2 contracts of each variant (bit c = contract c). */
static uint8_t variant_contracts(int variant) {
    if (variant == TRIX_VARIANT_COMPLEX || variant == TRIX_VARIANT_COMPLEX_PARTNERSHIP)
        return (uint8_t)((1u << TRIX_COMPLEX) | (1u << TRIX_TRIX));
    return (uint8_t)((1u << TRIX_KING) | (1u << TRIX_QUEENS) | (1u << TRIX_DIAMONDS) |
                     (1u << TRIX_TRICKS) | (1u << TRIX_TRIX));
}

/* §7 doubling contracts: KING (KH), QUEENS (any queen), COMPLEX (both). */
static uint8_t contract_double_mask(int contract) {
    switch (contract) {
    case TRIX_KING: return TRIX_DBL_KH;
    case TRIX_QUEENS: return TRIX_DBL_QC | TRIX_DBL_QD | TRIX_DBL_QH | TRIX_DBL_QS;
    case TRIX_COMPLEX: return TRIX_DBL_ALL;
    default: return 0;
    }
}

uint8_t trix_contract_doubles(int contract) { return contract_double_mask(contract); }

/* SWAR popcount: the builtin becomes a libgcc call without -mpopcnt. */
static inline int popcount64(uint64_t x) {
    x = x - ((x >> 1) & UINT64_C(0x5555555555555555));
    x = (x & UINT64_C(0x3333333333333333)) + ((x >> 2) & UINT64_C(0x3333333333333333));
    x = (x + (x >> 4)) & UINT64_C(0x0F0F0F0F0F0F0F0F);
    return (int)((x * UINT64_C(0x0101010101010101)) >> 56);
}
static int ctz64(uint64_t x) { return __builtin_ctzll(x); }

int trix_double_bit_card(int bit) {
    if (bit < 0 || bit > 4) return -1;
    return DOUBLE_BIT_CARDS[bit];
}

int trix_card_double_bit(int card) {
    for (int b = 0; b < 5; b++)
        if (DOUBLE_BIT_CARDS[b] == card) return b;
    return -1;
}

static uint8_t hand_double_bits(uint64_t hand) {
    uint8_t m = 0;
    for (int b = 0; b < 5; b++)
        if (hand & TRIX_BIT(DOUBLE_BIT_CARDS[b])) m |= (uint8_t)(1u << b);
    return m;
}

uint8_t trix_eligible_doubles(const trix_game *g, int seat) {
    if (seat < 0 || seat >= TRIX_SEATS || g->contract >= TRIX_NUM_CONTRACTS) return 0;
    return (uint8_t)(contract_double_mask(g->contract) & hand_double_bits(g->hand[seat]));
}

trix_options trix_default_options(void) {
    trix_options o;
    o.doubling = 1;
    o.doubling_reveal = TRIX_REVEAL_SEQUENTIAL;
    o.doubling_self_take = TRIX_SELF_TAKE_NOBODY;
    o.team_tiebreak = TRIX_TIEBREAK_LAST_TRIX;
    o.partnership_trix_early_end = 1;
    return o;
}

/* ---- event emission -------------------------------------------------------- */

typedef struct {
    trix_event *ev;
    int n;
    int cap;
} evbuf;

static trix_event *emit(evbuf *b, int kind, int seat) {
    trix_event *e;
    if (b->n >= b->cap) { /* cannot happen: cap >= TRIX_MAX_EVENTS is checked */
        e = &b->ev[b->cap - 1];
    } else {
        e = &b->ev[b->n++];
    }
    *e = (trix_event){0};
    e->kind = (uint8_t)kind;
    e->seat = (uint8_t)seat;
    return e;
}

/* ---- init and deals -------------------------------------------------------- */

trix_status trix_init(trix_game *g, int variant, const trix_options *opt) {
    if (!g) return TRIX_E_BAD_ARGUMENT;
    if (variant < TRIX_VARIANT_TRIX || variant > TRIX_VARIANT_COMPLEX_PARTNERSHIP)
        return TRIX_E_BAD_ARGUMENT;
    trix_options o = opt ? *opt : trix_default_options();
    if (o.doubling > 1 || o.doubling_reveal > 1 || o.doubling_self_take > 1 ||
        o.team_tiebreak > 1 || o.partnership_trix_early_end > 1)
        return TRIX_E_BAD_ARGUMENT;
    memset(g, 0, sizeof *g);
    g->variant = (uint8_t)variant;
    g->opt = o;
    int complex = variant == TRIX_VARIANT_COMPLEX || variant == TRIX_VARIANT_COMPLEX_PARTNERSHIP;
    g->deals_per_kingdom = complex ? COMPLEX_DEALS_PER_KINGDOM : TRIX_DEALS_PER_KINGDOM;
    g->num_deals = (uint8_t)(g->deals_per_kingdom * TRIX_KINGDOMS);
    g->phase = TRIX_PHASE_AWAITING_DEAL;
    g->first_owner = TRIX_NO_SEAT;
    g->owner = TRIX_NO_SEAT;
    g->contract = TRIX_NO_CONTRACT;
    g->turn = TRIX_NO_SEAT;
    g->trick_leader = TRIX_NO_SEAT;
    g->left = TRIX_NO_SEAT;
    g->last_trix_first_out = TRIX_NO_SEAT;
    for (int s = 0; s < TRIX_SEATS; s++) {
        g->row_low[s] = TRIX_NO_RANK;
        g->row_high[s] = TRIX_NO_RANK;
    }
    for (int b = 0; b < 5; b++) g->doubler[b] = TRIX_NO_SEAT;
    return TRIX_OK;
}

/* §3: a fresh deal of the current deal_index (its deck is present). */
static void start_deal(trix_game *g, evbuf *eb) {
    int d = g->deal_index;
    g->kingdom = (uint8_t)(d / g->deals_per_kingdom);
    if (d == 0) {
        /* §3: the holder of 7H in the game's first deal owns the first kingdom. */
        for (int s = 0; s < TRIX_SEATS; s++)
            if (g->deck[0][s] & TRIX_BIT(TRIX_CARD_7H)) g->first_owner = (uint8_t)s;
    }
    /* §3: each following kingdom is owned by next(previous owner). */
    g->owner = (uint8_t)((g->first_owner + g->kingdom) & 3);
    if (d % g->deals_per_kingdom == 0) g->played_contracts = 0;
    g->contract = TRIX_NO_CONTRACT;
    g->turn = g->owner;
    for (int s = 0; s < TRIX_SEATS; s++) {
        g->hand[s] = g->deck[d][s];
        g->answer_mask[s] = 0;
        g->trick_cards[s] = 0;
        g->tricks_taken[s] = 0;
        g->row_low[s] = TRIX_NO_RANK;
        g->row_high[s] = TRIX_NO_RANK;
        g->out[s] = TRIX_NO_SEAT;
        g->scores[s] = 0;
    }
    for (int b = 0; b < 5; b++) g->doubler[b] = TRIX_NO_SEAT;
    g->played = 0;
    g->answered = 0;
    g->n_answered = 0;
    g->trick_leader = g->owner;
    g->trick_len = 0;
    g->trick_index = 0;
    g->queens_taken = 0;
    g->diamonds_taken = 0;
    g->king_taken = 0;
    g->n_out = 0;
    g->layout_next = 0;
    g->phase = TRIX_PHASE_CHOOSE_CONTRACT;
    trix_deal_record *h = &g->hist[d];
    memset(h, 0, sizeof *h);
    h->owner = g->owner;
    h->contract = TRIX_NO_CONTRACT;
    g->n_deals_started = (uint8_t)(d + 1);
    trix_event *e = emit(eb, TRIX_EV_DEAL_STARTED, g->owner);
    e->a = (uint8_t)d;
    e->b = g->kingdom;
}

static int deck_valid(const uint64_t hands[TRIX_SEATS]) {
    uint64_t all = 0;
    for (int s = 0; s < TRIX_SEATS; s++) {
        if (popcount64(hands[s]) != TRIX_HAND_SIZE) return 0;
        if (hands[s] & ~TRIX_ALL_CARDS) return 0;
        if (all & hands[s]) return 0;
        all |= hands[s];
    }
    return all == TRIX_ALL_CARDS;
}

trix_status trix_provide_deal_masks(trix_game *g, const uint64_t hands[TRIX_SEATS],
                                    trix_event *ev, int cap, int *n_ev) {
    if (!g || !hands || !n_ev) return TRIX_E_BAD_ARGUMENT;
    *n_ev = 0;
    if (g->phase == TRIX_PHASE_GAME_OVER) return TRIX_E_GAME_OVER;
    if (!deck_valid(hands)) return TRIX_E_BAD_DECK;
    int d = 0;
    while (d < g->num_deals && (g->deck_present & (1u << d))) d++;
    if (d >= g->num_deals) return TRIX_E_BAD_ARGUMENT; /* every deal has its deck */
    if (g->phase == TRIX_PHASE_AWAITING_DEAL && d == g->deal_index && (!ev || cap < TRIX_MAX_EVENTS))
        return TRIX_E_BUFFER;
    for (int s = 0; s < TRIX_SEATS; s++) g->deck[d][s] = hands[s];
    g->deck_present |= 1u << d;
    if (g->phase == TRIX_PHASE_AWAITING_DEAL && d == g->deal_index) {
        evbuf eb = {ev, 0, cap};
        start_deal(g, &eb);
        *n_ev = eb.n;
    }
    return TRIX_OK;
}

trix_status trix_provide_deal(trix_game *g, const uint8_t hands[TRIX_SEATS][TRIX_HAND_SIZE],
                              trix_event *ev, int cap, int *n_ev) {
    if (!g || !hands || !n_ev) return TRIX_E_BAD_ARGUMENT;
    uint64_t m[TRIX_SEATS] = {0, 0, 0, 0};
    for (int s = 0; s < TRIX_SEATS; s++)
        for (int i = 0; i < TRIX_HAND_SIZE; i++) {
            if (hands[s][i] >= TRIX_CARDS) return TRIX_E_BAD_DECK;
            m[s] |= TRIX_BIT(hands[s][i]);
        }
    return trix_provide_deal_masks(g, m, ev, cap, n_ev);
}

/* ---- ranking (§8, §10) ------------------------------------------------------ */

/* Singles: place = 1 + seats (among `among`) with a strictly greater total. */
static void rank_singles(const int32_t totals[TRIX_SEATS], uint8_t among, uint8_t out[TRIX_SEATS]) {
    for (int s = 0; s < TRIX_SEATS; s++) {
        if (!(among & (1u << s))) continue;
        int place = 1;
        for (int t = 0; t < TRIX_SEATS; t++)
            if ((among & (1u << t)) && totals[t] > totals[s]) place++;
        out[s] = (uint8_t)place;
    }
}

static void rank_final(trix_game *g) {
    if (!trix_is_partnership(g->variant)) {
        rank_singles(g->totals, 0xF, g->ranking);
        return;
    }
    /* §8: teams ranked by team total; tiebreak by option. */
    int32_t t0 = g->totals[0] + g->totals[2], t1 = g->totals[1] + g->totals[3];
    uint8_t p0, p1;
    if (t0 > t1) {
        p0 = 1, p1 = 2;
    } else if (t1 > t0) {
        p0 = 2, p1 = 1;
    } else if (g->opt.team_tiebreak == TRIX_TIEBREAK_LAST_TRIX && g->last_trix_first_out != TRIX_NO_SEAT) {
        /* LAST_TRIX: the team whose member went out first in the last TRIX deal. */
        int team = g->last_trix_first_out & 1;
        p0 = team == 0 ? 1 : 2;
        p1 = team == 1 ? 1 : 2;
    } else {
        p0 = 1, p1 = 1; /* SHARED (or no TRIX deal played: cannot happen at a full end) */
    }
    g->ranking[0] = g->ranking[2] = p0;
    g->ranking[1] = g->ranking[3] = p1;
}

static void emit_game_ended(trix_game *g, evbuf *eb) {
    trix_event *e = emit(eb, TRIX_EV_GAME_ENDED, TRIX_NO_SEAT);
    for (int s = 0; s < TRIX_SEATS; s++) {
        e->v[s] = g->totals[s];
        e->r[s] = g->ranking[s];
    }
}

/* ---- deal end ---------------------------------------------------------------- */

static void end_deal(trix_game *g, evbuf *eb) {
    int d = g->deal_index;
    trix_event *e = emit(eb, TRIX_EV_DEAL_SCORED, TRIX_NO_SEAT);
    e->a = (uint8_t)d;
    trix_deal_record *h = &g->hist[d];
    for (int s = 0; s < TRIX_SEATS; s++) {
        e->v[s] = g->scores[s];
        h->scores[s] = g->scores[s];
        g->totals[s] += g->scores[s];
    }
    h->scored = 1;
    if (g->contract == TRIX_TRIX) g->last_trix_first_out = g->out[0];
    g->turn = TRIX_NO_SEAT;
    if (d + 1 >= g->num_deals) {
        /* §8: after the last deal of the fourth kingdom the totals are final. */
        g->phase = TRIX_PHASE_GAME_OVER;
        rank_final(g);
        emit_game_ended(g, eb);
        return;
    }
    g->deal_index = (uint8_t)(d + 1);
    g->kingdom = (uint8_t)(g->deal_index / g->deals_per_kingdom);
    g->contract = TRIX_NO_CONTRACT;
    if (g->deck_present & (1u << g->deal_index)) {
        start_deal(g, eb);
    } else {
        g->phase = TRIX_PHASE_AWAITING_DEAL;
    }
}

/* ---- legal moves --------------------------------------------------------------- */

/* §6: a jack, or one above the row's highest / one below its lowest card.
 * Recomputed after each layout card into g->layout_next. */
static uint64_t layout_compute(const trix_game *g) {
    uint64_t m = 0;
    for (int su = 0; su < TRIX_SUITS; su++) {
        if (g->row_low[su] == TRIX_NO_RANK) {
            m |= TRIX_BIT(TRIX_CARD(su, JACK_RANK_INDEX));
        } else {
            if (g->row_high[su] < ACE_RANK_INDEX) m |= TRIX_BIT(TRIX_CARD(su, g->row_high[su] + 1));
            if (g->row_low[su] > 0) m |= TRIX_BIT(TRIX_CARD(su, g->row_low[su] - 1));
        }
    }
    return m;
}

static inline uint64_t layout_playable(const trix_game *g) { return g->layout_next; }

/* §4: follow the led suit if held, otherwise any card. */
static uint64_t trick_playable(const trix_game *g, int seat) {
    uint64_t h = g->hand[seat];
    if (g->trick_len == 0) return h;
    uint64_t f = h & TRIX_SUIT_MASK(TRIX_SUIT_OF(g->trick_cards[0]));
    return f ? f : h;
}

uint64_t trix_legal_cards(const trix_game *g, int seat) {
    if (seat < 0 || seat >= TRIX_SEATS || g->phase != TRIX_PHASE_PLAY || seat != g->turn) return 0;
    if (g->contract == TRIX_TRIX) return g->hand[seat] & layout_playable(g);
    return trick_playable(g, seat);
}

int trix_to_act(const trix_game *g, uint8_t out[TRIX_SEATS]) {
    switch (g->phase) {
    case TRIX_PHASE_CHOOSE_CONTRACT:
    case TRIX_PHASE_PLAY:
        out[0] = g->turn;
        return 1;
    case TRIX_PHASE_DOUBLING:
        if (g->opt.doubling_reveal == TRIX_REVEAL_SEQUENTIAL) {
            out[0] = g->turn;
            return 1;
        } else {
            int n = 0;
            for (int s = 0; s < TRIX_SEATS; s++)
                if (!(g->answered & (1u << s))) out[n++] = (uint8_t)s;
            return n;
        }
    default: return 0;
    }
}

int trix_legal_actions(const trix_game *g, int seat, uint8_t out[TRIX_MAX_ACTIONS]) {
    if (seat < 0 || seat >= TRIX_SEATS) return 0;
    int n = 0;
    switch (g->phase) {
    case TRIX_PHASE_CHOOSE_CONTRACT: {
        if (seat != g->turn) return 0;
        uint8_t avail = (uint8_t)(variant_contracts(g->variant) & ~g->played_contracts);
        for (int c = 0; c < TRIX_NUM_CONTRACTS; c++)
            if (avail & (1u << c)) out[n++] = (uint8_t)(TRIX_ACTION_CHOOSE_BASE + c);
        return n;
    }
    case TRIX_PHASE_DOUBLING: {
        if (g->answered & (1u << seat)) return 0;
        if (g->opt.doubling_reveal == TRIX_REVEAL_SEQUENTIAL && seat != g->turn) return 0;
        uint8_t e = trix_eligible_doubles(g, seat);
        for (int m = 0; m <= TRIX_DBL_ALL; m++)
            if ((m & ~e) == 0) out[n++] = (uint8_t)(TRIX_ACTION_DOUBLE_BASE + m);
        return n;
    }
    case TRIX_PHASE_PLAY: {
        uint64_t m = trix_legal_cards(g, seat);
        while (m) {
            out[n++] = (uint8_t)ctz64(m);
            m &= m - 1;
        }
        return n;
    }
    default: return 0;
    }
}

/* ---- check -------------------------------------------------------------------- */

trix_status trix_check(const trix_game *g, int seat, int action) {
    if (seat < 0 || seat >= TRIX_SEATS) return TRIX_E_BAD_SEAT;
    if (action < 0 || action >= TRIX_ACTION_LIMIT ||
        (action >= TRIX_ACTION_CHOOSE_BASE + TRIX_NUM_CONTRACTS && action < TRIX_ACTION_DOUBLE_BASE))
        return TRIX_E_BAD_ACTION;
    if (g->phase == TRIX_PHASE_GAME_OVER) return TRIX_E_GAME_OVER;
    if (action < TRIX_CARDS) {
        if (g->phase != TRIX_PHASE_PLAY) {
            /* §12: a card after the deal has ended is illegal. */
            if (g->deal_index > 0 && (g->phase == TRIX_PHASE_CHOOSE_CONTRACT ||
                                      g->phase == TRIX_PHASE_AWAITING_DEAL))
                return TRIX_E_DEAL_HAS_ENDED;
            return TRIX_E_WRONG_PHASE;
        }
        if (seat != g->turn) return TRIX_E_NOT_YOUR_TURN;
        if (!(g->hand[seat] & TRIX_BIT(action))) return TRIX_E_NOT_IN_HAND;
        if (g->contract == TRIX_TRIX) {
            if (!(layout_playable(g) & TRIX_BIT(action))) return TRIX_E_NOT_PLAYABLE_ON_LAYOUT;
        } else if (!(trick_playable(g, seat) & TRIX_BIT(action))) {
            return TRIX_E_MUST_FOLLOW_SUIT;
        }
        return TRIX_OK;
    }
    if (action < TRIX_ACTION_DOUBLE_BASE) {
        int c = action - TRIX_ACTION_CHOOSE_BASE;
        if (g->phase != TRIX_PHASE_CHOOSE_CONTRACT) return TRIX_E_WRONG_PHASE;
        if (seat != g->turn) return TRIX_E_NOT_YOUR_TURN;
        /* §2 the variant's set; §3 not yet played in this kingdom. */
        if (!(variant_contracts(g->variant) & (1u << c))) return TRIX_E_CONTRACT_NOT_IN_VARIANT;
        if (g->played_contracts & (1u << c)) return TRIX_E_CONTRACT_ALREADY_PLAYED;
        return TRIX_OK;
    }
    int mask = action - TRIX_ACTION_DOUBLE_BASE;
    if (g->phase != TRIX_PHASE_DOUBLING) return TRIX_E_WRONG_PHASE;
    /* §7: every seat answers once. */
    if (g->answered & (1u << seat)) return TRIX_E_ALREADY_ANSWERED;
    if (g->opt.doubling_reveal == TRIX_REVEAL_SEQUENTIAL && seat != g->turn)
        return TRIX_E_NOT_YOUR_TURN;
    if (mask & ~trix_eligible_doubles(g, seat)) return TRIX_E_NOT_ELIGIBLE_TO_DOUBLE;
    return TRIX_OK;
}

/* ---- apply ---------------------------------------------------------------------- */

static void begin_play(trix_game *g, evbuf *eb);

static void do_choose(trix_game *g, int seat, int contract, evbuf *eb) {
    g->contract = (uint8_t)contract;
    g->played_contracts |= (uint8_t)(1u << contract);
    g->hist[g->deal_index].contract = (uint8_t)contract;
    trix_event *e = emit(eb, TRIX_EV_CONTRACT_CHOSEN, seat);
    e->a = (uint8_t)contract;
    /* §7: doubling happens before the first card of a doubling contract. */
    if (g->opt.doubling && contract_double_mask(contract)) {
        g->phase = TRIX_PHASE_DOUBLING;
        g->turn = g->owner; /* SEQUENTIAL: in turn from the owner */
        g->answered = 0;
        g->n_answered = 0;
    } else {
        begin_play(g, eb);
    }
}

static void do_double(trix_game *g, int seat, int mask, evbuf *eb) {
    trix_deal_record *h = &g->hist[g->deal_index];
    g->answer_mask[seat] = (uint8_t)mask;
    g->answered |= (uint8_t)(1u << seat);
    h->answer_seat[h->n_answers] = (uint8_t)seat;
    h->answer_mask[h->n_answers] = (uint8_t)mask;
    h->n_answers++;
    g->n_answered++;
    for (int b = 0; b < 5; b++)
        if (mask & (1 << b)) g->doubler[b] = (uint8_t)seat;
    trix_event *e = emit(eb, TRIX_EV_DOUBLE_ANSWERED, seat);
    e->a = (uint8_t)mask;
    if (g->opt.doubling_reveal == TRIX_REVEAL_SEQUENTIAL) g->turn = (uint8_t)trix_next(seat);
    if (g->n_answered == TRIX_SEATS) {
        if (g->opt.doubling_reveal == TRIX_REVEAL_SIMULTANEOUS) {
            /* §7 SIMULTANEOUS: all doubled cards are revealed together. */
            trix_event *r = emit(eb, TRIX_EV_DOUBLES_REVEALED, TRIX_NO_SEAT);
            for (int s = 0; s < TRIX_SEATS; s++) r->r[s] = g->answer_mask[s];
        }
        begin_play(g, eb);
    }
}

/* §6: pass seats without a legal card (automatic), skip seats with no cards. */
static void settle_layout_turn(trix_game *g, evbuf *eb) {
    uint64_t playable = layout_playable(g);
    for (int i = 0; i < 8; i++) {
        int s = g->turn;
        if (g->hand[s]) {
            if (g->hand[s] & playable) return;
            emit(eb, TRIX_EV_SEAT_PASSED, s);
        }
        g->turn = (uint8_t)trix_next(s);
    }
}

static void begin_play(trix_game *g, evbuf *eb) {
    g->phase = TRIX_PHASE_PLAY;
    g->turn = g->owner; /* §3: the owner leads the first trick or plays first */
    g->trick_leader = g->owner;
    g->trick_len = 0;
    if (g->contract == TRIX_TRIX) {
        g->layout_next = layout_compute(g);
        settle_layout_turn(g, eb);
    }
}

static void apply_trick_points(trix_game *g, int winner, int32_t pts[TRIX_SEATS]) {
    int c = g->contract;
    int all = c == TRIX_COMPLEX; /* §5 COMPLEX: all of the penalties at once */
    int nq = 0, nd = 0, kh = 0;
    for (int i = 0; i < TRIX_SEATS; i++) {
        int card = g->trick_cards[i];
        if (TRIX_BIT(card) & TRIX_QUEENS_MASK) nq++;
        if (TRIX_SUIT_OF(card) == TRIX_SUIT_D) nd++; /* §5: QD is a queen and a diamond */
        if (card == TRIX_CARD_KH) kh = 1;
    }
    if (c == TRIX_KING || all) pts[winner] += kh * KING_OF_HEARTS_PENALTY;
    if (c == TRIX_QUEENS || all) pts[winner] += nq * QUEEN_PENALTY;
    if (c == TRIX_DIAMONDS || all) pts[winner] += nd * DIAMOND_PENALTY;
    if (c == TRIX_TRICKS || all) pts[winner] += TRICK_PENALTY;
    /* §7: each doubled card in this trick is scored on its own. */
    uint8_t dmask = contract_double_mask(c);
    for (int i = 0; i < TRIX_SEATS; i++) {
        int b = trix_card_double_bit(g->trick_cards[i]);
        if (b < 0 || !(dmask & (1u << b)) || g->doubler[b] == TRIX_NO_SEAT) continue;
        int v = g->trick_cards[i] == TRIX_CARD_KH ? KING_OF_HEARTS_DOUBLE_VALUE : QUEEN_DOUBLE_VALUE;
        int doubler = g->doubler[b];
        pts[winner] -= v;
        if (doubler != winner) {
            pts[doubler] += v;
        } else if (g->opt.doubling_self_take == TRIX_SELF_TAKE_LEADER && g->trick_leader != winner) {
            pts[g->trick_leader] += v;
        }
    }
    g->queens_taken = (uint8_t)(g->queens_taken + nq);
    g->diamonds_taken = (uint8_t)(g->diamonds_taken + nd);
    g->king_taken = (uint8_t)(g->king_taken | kh);
}

static void play_trick_card(trix_game *g, int seat, int card, evbuf *eb) {
    g->trick_cards[g->trick_len++] = (uint8_t)card;
    if (g->trick_len < TRIX_SEATS) {
        g->turn = (uint8_t)trix_next(seat);
        return;
    }
    /* §4: the highest card of the led suit wins; the winner leads next. */
    int led = TRIX_SUIT_OF(g->trick_cards[0]);
    int best = 0;
    for (int i = 1; i < TRIX_SEATS; i++)
        if (TRIX_SUIT_OF(g->trick_cards[i]) == led &&
            TRIX_RANK_OF(g->trick_cards[i]) > TRIX_RANK_OF(g->trick_cards[best]))
            best = i;
    int winner = (g->trick_leader + best) & 3;
    int32_t pts[TRIX_SEATS] = {0, 0, 0, 0};
    apply_trick_points(g, winner, pts);
    trix_event *e = emit(eb, TRIX_EV_TRICK_TAKEN, winner);
    e->a = g->trick_index;
    for (int s = 0; s < TRIX_SEATS; s++) {
        e->v[s] = pts[s];
        g->scores[s] += pts[s];
    }
    g->tricks_taken[winner]++;
    g->trick_index++;
    g->trick_len = 0;
    g->trick_leader = (uint8_t)winner;
    g->turn = (uint8_t)winner;
    /* §4 early ends: nothing is left to score. */
    int c = g->contract;
    if (g->trick_index >= TRICKS_PER_DEAL || (c == TRIX_KING && g->king_taken) ||
        (c == TRIX_QUEENS && g->queens_taken == QUEENS_IN_DECK) ||
        (c == TRIX_DIAMONDS && g->diamonds_taken == DIAMONDS_IN_DECK))
        end_deal(g, eb);
}

static void seat_out(trix_game *g, int seat, evbuf *eb) {
    int place = ++g->n_out;
    g->out[place - 1] = (uint8_t)seat;
    int32_t p = TRIX_PLACE_POINTS[place - 1];
    g->scores[seat] += p;
    trix_event *e = emit(eb, TRIX_EV_SEAT_OUT, seat);
    e->a = (uint8_t)place;
    e->v[0] = p;
}

static void play_layout_card(trix_game *g, int seat, int card, evbuf *eb) {
    int su = TRIX_SUIT_OF(card), r = TRIX_RANK_OF(card);
    if (g->row_low[su] == TRIX_NO_RANK) {
        g->row_low[su] = g->row_high[su] = (uint8_t)r; /* §6: the jack starts the row */
    } else if (r == g->row_high[su] + 1) {
        g->row_high[su] = (uint8_t)r;
    } else {
        g->row_low[su] = (uint8_t)r;
    }
    g->layout_next = layout_compute(g);
    if (g->hand[seat] == 0) {
        seat_out(g, seat, eb);
        /* §6 partnership_trix_early_end: the first two out are partners. */
        if (g->n_out == 2 && trix_is_partnership(g->variant) && g->opt.partnership_trix_early_end &&
            g->out[1] == trix_partner(g->out[0])) {
            int a = trix_next(g->out[1]), b = trix_partner(a);
            int ca = popcount64(g->hand[a]), cb = popcount64(g->hand[b]);
            /* fewer cards gets +100; equal counts: next(second out) gets +100 */
            if (cb < ca) {
                int t = a;
                a = b;
                b = t;
            }
            seat_out(g, a, eb);
            seat_out(g, b, eb);
            end_deal(g, eb);
            return;
        }
        if (g->n_out == 3) {
            /* §6: three seats out ends the deal; the last gets +50. */
            for (int s = 0; s < TRIX_SEATS; s++)
                if (g->hand[s]) {
                    seat_out(g, s, eb);
                    break;
                }
            end_deal(g, eb);
            return;
        }
    }
    g->turn = (uint8_t)trix_next(seat);
    settle_layout_turn(g, eb);
}

static void do_play(trix_game *g, int seat, int card, evbuf *eb) {
    trix_deal_record *h = &g->hist[g->deal_index];
    g->hand[seat] &= ~TRIX_BIT(card);
    g->played |= TRIX_BIT(card);
    h->plays[h->n_plays++] = (uint8_t)card;
    trix_event *e = emit(eb, TRIX_EV_CARD_PLAYED, seat);
    e->a = (uint8_t)card;
    if (g->contract == TRIX_TRIX)
        play_layout_card(g, seat, card, eb);
    else
        play_trick_card(g, seat, card, eb);
}

trix_status trix_apply(trix_game *g, int seat, int action, trix_event *ev, int cap, int *n_ev) {
    if (!g || !ev || !n_ev) return TRIX_E_BAD_ARGUMENT;
    *n_ev = 0;
    if (cap < TRIX_MAX_EVENTS) return TRIX_E_BUFFER;
    trix_status st = trix_check(g, seat, action);
    if (st != TRIX_OK) return st;
    evbuf eb = {ev, 0, cap};
    if (action < TRIX_CARDS)
        do_play(g, seat, action, &eb);
    else if (action < TRIX_ACTION_DOUBLE_BASE)
        do_choose(g, seat, action - TRIX_ACTION_CHOOSE_BASE, &eb);
    else
        do_double(g, seat, action - TRIX_ACTION_DOUBLE_BASE, &eb);
    *n_ev = eb.n;
    return TRIX_OK;
}

/* §10: the game ends at once; the leaver (and partner) ranked last; the others
 * among themselves by the totals of finished deals (the unfinished deal does
 * not count: totals only ever hold finished deals). */
trix_status trix_leave(trix_game *g, int seat, trix_event *ev, int cap, int *n_ev) {
    if (!g || !ev || !n_ev) return TRIX_E_BAD_ARGUMENT;
    *n_ev = 0;
    if (cap < TRIX_MAX_EVENTS) return TRIX_E_BUFFER;
    if (seat < 0 || seat >= TRIX_SEATS) return TRIX_E_BAD_SEAT;
    if (g->phase == TRIX_PHASE_GAME_OVER) return TRIX_E_GAME_OVER;
    evbuf eb = {ev, 0, cap};
    g->left = (uint8_t)seat;
    g->phase = TRIX_PHASE_GAME_OVER;
    g->turn = TRIX_NO_SEAT;
    if (trix_is_partnership(g->variant)) {
        for (int s = 0; s < TRIX_SEATS; s++) g->ranking[s] = (uint8_t)((s & 1) == (seat & 1) ? 2 : 1);
    } else {
        rank_singles(g->totals, (uint8_t)(0xF & ~(1u << seat)), g->ranking);
        g->ranking[seat] = 4;
    }
    emit(&eb, TRIX_EV_SEAT_LEFT, seat);
    emit_game_ended(g, &eb);
    *n_ev = eb.n;
    return TRIX_OK;
}

/* ---- snapshot / restore ------------------------------------------------------- */

/* Format v1, little-endian:
 *   "TRXS" | version u8 | total length u32 | variant u8 | options 5 x u8 |
 *   deck_present u32 | per present deck: 52 x seat-of-card u8 |
 *   n_deals_started u8 | per started deal: contract u8, n_answers u8,
 *   n_answers x (seat u8, mask u8), n_plays u8, n_plays x card u8 |
 *   left u8 | CRC-32 (IEEE) u32 of all previous bytes.
 * Only inputs are stored; restore replays them through trix_apply, so every
 * derived field is recomputed by the rules and cannot be out of range. */
enum { SNAPSHOT_VERSION = 1, SNAPSHOT_HEADER = 9, SNAPSHOT_MIN = 9 + 6 + 4 + 1 + 1 + 4 };

static uint32_t crc32_ieee(const uint8_t *p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return ~c;
}

static void put_u32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static uint32_t get_u32(const uint8_t *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

trix_status trix_snapshot(const trix_game *g, uint8_t *buf, size_t cap, size_t *len) {
    if (!g || !buf || !len) return TRIX_E_BAD_ARGUMENT;
    uint8_t tmp[TRIX_SNAPSHOT_MAX];
    size_t n = 0;
    memcpy(tmp, "TRXS", 4);
    n = 4;
    tmp[n++] = SNAPSHOT_VERSION;
    n += 4; /* length, filled below */
    tmp[n++] = g->variant;
    tmp[n++] = g->opt.doubling;
    tmp[n++] = g->opt.doubling_reveal;
    tmp[n++] = g->opt.doubling_self_take;
    tmp[n++] = g->opt.team_tiebreak;
    tmp[n++] = g->opt.partnership_trix_early_end;
    put_u32(tmp + n, g->deck_present);
    n += 4;
    for (int d = 0; d < TRIX_MAX_DEALS; d++) {
        if (!(g->deck_present & (1u << d))) continue;
        for (int c = 0; c < TRIX_CARDS; c++) {
            uint8_t s = 0;
            while (s < 3 && !(g->deck[d][s] & TRIX_BIT(c))) s++;
            tmp[n++] = s;
        }
    }
    tmp[n++] = g->n_deals_started;
    for (int d = 0; d < g->n_deals_started && d < TRIX_MAX_DEALS; d++) {
        const trix_deal_record *h = &g->hist[d];
        tmp[n++] = h->contract;
        tmp[n++] = h->n_answers;
        for (int i = 0; i < h->n_answers && i < TRIX_MAX_ANSWERS; i++) {
            tmp[n++] = h->answer_seat[i];
            tmp[n++] = h->answer_mask[i];
        }
        tmp[n++] = h->n_plays;
        for (int i = 0; i < h->n_plays && i < TRIX_CARDS; i++) tmp[n++] = h->plays[i];
    }
    tmp[n++] = g->left;
    put_u32(tmp + 5, (uint32_t)(n + 4));
    put_u32(tmp + n, crc32_ieee(tmp, n));
    n += 4;
    if (n > cap) return TRIX_E_BUFFER;
    memcpy(buf, tmp, n);
    *len = n;
    return TRIX_OK;
}

typedef struct {
    const uint8_t *p;
    size_t n, pos;
    int bad;
} reader;

static uint8_t rd8(reader *r) {
    if (r->pos >= r->n) {
        r->bad = 1;
        return 0;
    }
    return r->p[r->pos++];
}

static trix_status restore_body(trix_game *g, reader *r) {
    trix_event ev[TRIX_MAX_EVENTS];
    int nev;
    int variant = rd8(r);
    trix_options o;
    o.doubling = rd8(r);
    o.doubling_reveal = rd8(r);
    o.doubling_self_take = rd8(r);
    o.team_tiebreak = rd8(r);
    o.partnership_trix_early_end = rd8(r);
    if (r->bad || trix_init(g, variant, &o) != TRIX_OK) return TRIX_E_CORRUPT;
    if (r->pos + 4 > r->n) return TRIX_E_CORRUPT;
    uint32_t present = get_u32(r->p + r->pos);
    r->pos += 4;
    /* provide_deal always fills the first missing deal: a prefix of deals */
    if (present & (present + 1)) return TRIX_E_CORRUPT;
    if (present >> g->num_deals) return TRIX_E_CORRUPT;
    for (int d = 0; d < g->num_deals && (present & (1u << d)); d++) {
        uint64_t m[TRIX_SEATS] = {0, 0, 0, 0};
        for (int c = 0; c < TRIX_CARDS; c++) {
            uint8_t s = rd8(r);
            if (r->bad || s >= TRIX_SEATS) return TRIX_E_CORRUPT;
            m[s] |= TRIX_BIT(c);
        }
        if (trix_provide_deal_masks(g, m, ev, TRIX_MAX_EVENTS, &nev) != TRIX_OK) return TRIX_E_CORRUPT;
    }
    int started = rd8(r);
    if (r->bad || started > g->num_deals) return TRIX_E_CORRUPT;
    for (int d = 0; d < started; d++) {
        if (g->phase != TRIX_PHASE_CHOOSE_CONTRACT || g->deal_index != d) return TRIX_E_CORRUPT;
        int contract = rd8(r);
        int na = rd8(r);
        if (r->bad) return TRIX_E_CORRUPT;
        if (contract == TRIX_NO_CONTRACT) {
            if (na != 0 || rd8(r) != 0 || r->bad || d != started - 1) return TRIX_E_CORRUPT;
            break;
        }
        if (contract >= TRIX_NUM_CONTRACTS) return TRIX_E_CORRUPT;
        if (trix_apply(g, g->owner, TRIX_ACTION_CHOOSE_BASE + contract, ev, TRIX_MAX_EVENTS, &nev) != TRIX_OK)
            return TRIX_E_CORRUPT;
        if (na > TRIX_MAX_ANSWERS) return TRIX_E_CORRUPT;
        for (int i = 0; i < na; i++) {
            int s = rd8(r), m = rd8(r);
            if (r->bad || m > TRIX_DBL_ALL) return TRIX_E_CORRUPT;
            if (trix_apply(g, s, TRIX_ACTION_DOUBLE_BASE + m, ev, TRIX_MAX_EVENTS, &nev) != TRIX_OK)
                return TRIX_E_CORRUPT;
        }
        int np = rd8(r);
        if (r->bad || np > TRIX_CARDS) return TRIX_E_CORRUPT;
        for (int i = 0; i < np; i++) {
            int c = rd8(r);
            if (r->bad || c >= TRIX_CARDS) return TRIX_E_CORRUPT;
            int s = 0;
            while (s < 3 && !(g->deck[d][s] & TRIX_BIT(c))) s++;
            if (trix_apply(g, s, c, ev, TRIX_MAX_EVENTS, &nev) != TRIX_OK) return TRIX_E_CORRUPT;
        }
    }
    if (g->n_deals_started != started) return TRIX_E_CORRUPT;
    int left = rd8(r);
    if (r->bad) return TRIX_E_CORRUPT;
    if (left != TRIX_NO_SEAT) {
        if (trix_leave(g, left, ev, TRIX_MAX_EVENTS, &nev) != TRIX_OK) return TRIX_E_CORRUPT;
    }
    return TRIX_OK;
}

trix_status trix_restore(trix_game *g, const uint8_t *buf, size_t len) {
    if (!g) return TRIX_E_BAD_ARGUMENT;
    trix_init(g, TRIX_VARIANT_TRIX, NULL);
    if (!buf || len < SNAPSHOT_MIN || len > TRIX_SNAPSHOT_MAX) return TRIX_E_CORRUPT;
    if (memcmp(buf, "TRXS", 4) != 0 || buf[4] != SNAPSHOT_VERSION) return TRIX_E_CORRUPT;
    if (get_u32(buf + 5) != len) return TRIX_E_CORRUPT;
    if (crc32_ieee(buf, len - 4) != get_u32(buf + len - 4)) return TRIX_E_CORRUPT;
    reader r = {buf, len - 4, SNAPSHOT_HEADER, 0};
    trix_status st = restore_body(g, &r);
    if (st == TRIX_OK && r.pos != r.n) st = TRIX_E_CORRUPT;
    if (st == TRIX_OK) {
        /* canonical form only: the bytes must be exactly what snapshot writes */
        uint8_t again[TRIX_SNAPSHOT_MAX];
        size_t n2 = 0;
        if (trix_snapshot(g, again, sizeof again, &n2) != TRIX_OK || n2 != len ||
            memcmp(again, buf, len) != 0)
            st = TRIX_E_CORRUPT;
    }
    if (st != TRIX_OK) trix_init(g, TRIX_VARIANT_TRIX, NULL);
    return st;
}

/* ---- playouts ------------------------------------------------------------------- */

static void random_deck(uint64_t *rng, uint64_t hands[TRIX_SEATS]) {
    uint8_t cards[TRIX_CARDS];
    for (int i = 0; i < TRIX_CARDS; i++) cards[i] = (uint8_t)i;
    for (int i = TRIX_CARDS - 1; i > 0; i--) {
        int j = (int)trix_rng_below(rng, (uint32_t)(i + 1));
        uint8_t t = cards[i];
        cards[i] = cards[j];
        cards[j] = t;
    }
    for (int s = 0; s < TRIX_SEATS; s++) {
        hands[s] = 0;
        for (int i = 0; i < TRIX_HAND_SIZE; i++) hands[s] |= TRIX_BIT(cards[s * TRIX_HAND_SIZE + i]);
    }
}

static int nth_bit(uint64_t m, uint32_t k) {
    while (k--) m &= m - 1;
    return ctz64(m);
}

trix_status trix_playout(trix_game *g, const uint8_t policies[TRIX_SEATS], uint64_t seed,
                         uint32_t *moves) {
    if (!g || !policies) return TRIX_E_BAD_ARGUMENT;
    for (int s = 0; s < TRIX_SEATS; s++)
        if (policies[s] > TRIX_POLICY_BOT) return TRIX_E_BAD_ARGUMENT;
    uint64_t rng = seed;
    trix_event ev[TRIX_MAX_EVENTS];
    int nev;
    uint32_t count = 0;
    uint8_t acts[TRIX_MAX_ACTIONS];
    uint8_t seats[TRIX_SEATS];
    /* a game has at most 20 * (1 + 4 + 52) decisions: bound the loop anyway */
    for (int guard = 0; guard < 4096; guard++) {
        if (g->phase == TRIX_PHASE_GAME_OVER) {
            if (moves) *moves = count;
            return TRIX_OK;
        }
        if (g->phase == TRIX_PHASE_AWAITING_DEAL) {
            uint64_t hands[TRIX_SEATS];
            random_deck(&rng, hands);
            trix_status st = trix_provide_deal_masks(g, hands, ev, TRIX_MAX_EVENTS, &nev);
            if (st != TRIX_OK) return st;
            continue;
        }
        if (trix_to_act(g, seats) == 0) return TRIX_E_BAD_ARGUMENT;
        int seat = seats[0];
        int action;
        if (policies[seat] == TRIX_POLICY_BOT) {
            action = trix_bot_action(g, seat, &rng);
        } else if (g->phase == TRIX_PHASE_PLAY) {
            uint64_t m = trix_legal_cards(g, seat);
            if (!m) return TRIX_E_BAD_ARGUMENT;
            action = policies[seat] == TRIX_POLICY_LOWEST
                         ? ctz64(m)
                         : nth_bit(m, trix_rng_below(&rng, (uint32_t)popcount64(m)));
        } else {
            int n = trix_legal_actions(g, seat, acts);
            if (n == 0) return TRIX_E_BAD_ARGUMENT;
            action = policies[seat] == TRIX_POLICY_LOWEST ? acts[0]
                                                           : acts[trix_rng_below(&rng, (uint32_t)n)];
        }
        trix_status st = trix_apply(g, seat, action, ev, TRIX_MAX_EVENTS, &nev);
        if (st != TRIX_OK) return st;
        count++;
    }
    return TRIX_E_BAD_ARGUMENT;
}
