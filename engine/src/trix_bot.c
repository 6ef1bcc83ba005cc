/*
 * trix_bot.c: the heuristic bot (docs/rules.md §9 auto-play, §10 free-table seats,
 * `trix selfplay`, `trix bench bot`).
 *
 * A pure function of what `seat` may see (docs/rules.md §14): its own hand, the
 * cards placed this deal (and in which order, so who played them and which
 * seats showed a void), the current trick, the layout, the public hand counts,
 * the contract and, once play has begun, the doubled cards. It never reads
 * another seat's hand, the decks, or doubling answers that are still secret
 * (SIMULTANEOUS mode, §7): the doubling decision itself uses only the hand.
 *
 * The rng is only used to break exact ties between equally scored actions.
 * Every answer is checked against trix_legal_actions before it is returned.
 */
#include "trix_engine.h"

#include <string.h>

enum { JACK = 9, QUEEN = 10, KING = 11, ACE = 12 };

static int popc(uint64_t x) { return __builtin_popcountll(x); }
static int lowest(uint64_t x) { return __builtin_ctzll(x); }

/* ---- what the seat sees ------------------------------------------------------ */

typedef struct {
    const trix_game *g;
    int seat;
    int contract;
    int partnership;
    uint64_t my;     /* own hand */
    uint64_t unseen; /* cards in other hands: neither mine nor placed (§14) */
    uint8_t voids[TRIX_SEATS]; /* bit suit: seat showed a void this deal (public) */
} view;

static uint64_t suit_cards(uint64_t m, int suit) { return m & TRIX_SUIT_MASK(suit); }

/* Cards of `m` in `card`'s suit strictly above / below it. */
static uint64_t above(uint64_t m, int card) {
    int s = TRIX_SUIT_OF(card);
    uint64_t higher = TRIX_SUIT_MASK(s) & ~((TRIX_BIT(card) << 1) - 1);
    return m & higher;
}
static uint64_t below(uint64_t m, int card) {
    int s = TRIX_SUIT_OF(card);
    return m & TRIX_SUIT_MASK(s) & (TRIX_BIT(card) - 1);
}

/* §12 plays are public (who played each card is public, §14): walk the
 * completed tricks of this deal to learn which seats showed a void. */
static void infer_voids(view *v) {
    const trix_game *g = v->g;
    memset(v->voids, 0, sizeof v->voids);
    if (g->contract == TRIX_TRIX || g->contract >= TRIX_NUM_CONTRACTS) return;
    const trix_deal_record *h = &g->hist[g->deal_index];
    int leader = g->owner; /* §3: the owner leads the first trick */
    int full = g->trick_index;
    for (int t = 0; t < full && 4 * t + 3 < h->n_plays; t++) {
        const uint8_t *c = &h->plays[4 * t];
        int led = TRIX_SUIT_OF(c[0]), best = 0;
        for (int k = 1; k < 4; k++) {
            if (TRIX_SUIT_OF(c[k]) != led)
                v->voids[(leader + k) & 3] |= (uint8_t)(1u << led);
            else if (TRIX_RANK_OF(c[k]) > TRIX_RANK_OF(c[best]))
                best = k;
        }
        leader = (leader + best) & 3;
    }
    if (g->trick_len > 0) {
        int led = TRIX_SUIT_OF(g->trick_cards[0]);
        for (int k = 1; k < g->trick_len; k++)
            if (TRIX_SUIT_OF(g->trick_cards[k]) != led)
                v->voids[(g->trick_leader + k) & 3] |= (uint8_t)(1u << led);
    }
}

static void make_view(view *v, const trix_game *g, int seat) {
    v->g = g;
    v->seat = seat;
    v->contract = g->contract;
    v->partnership = trix_is_partnership(g->variant);
    v->my = g->hand[seat];
    v->unseen = TRIX_ALL_CARDS & ~v->my & ~g->played;
    infer_voids(v);
}

/* ---- penalties (§5, §7) ------------------------------------------------------- */

static int is_queen(int card) { return TRIX_RANK_OF(card) == QUEEN; }

/* Points the taker of `card` loses in this contract, doubling included. The
 * doubled cards are public once play has begun (§7, §14). */
static double card_penalty(const view *v, int card) {
    int c = v->contract;
    double p = 0;
    int all = c == TRIX_COMPLEX;
    if ((c == TRIX_KING || all) && card == TRIX_CARD_KH) p += 75;
    if ((c == TRIX_QUEENS || all) && is_queen(card)) p += 25;
    if ((c == TRIX_DIAMONDS || all) && TRIX_SUIT_OF(card) == TRIX_SUIT_D) p += 10;
    int b = trix_card_double_bit(card);
    if (p > 0 && b >= 0 && v->g->phase == TRIX_PHASE_PLAY && v->g->doubler[b] != TRIX_NO_SEAT &&
        (trix_contract_doubles(c) & (1u << b)))
        p += card == TRIX_CARD_KH ? 75 : 25;
    return p;
}

/* §5: TRICKS and COMPLEX charge every trick. */
static double trick_base(const view *v) {
    return (v->contract == TRIX_TRICKS || v->contract == TRIX_COMPLEX) ? 15 : 0;
}

/* Sum of penalties still held by others (could be dumped on a trick). */
static double unseen_penalty(const view *v, uint64_t m) {
    double p = 0;
    for (; m; m &= m - 1) p += card_penalty(v, lowest(m));
    return p;
}

/* How likely `card` is to win tricks later: it beats the unseen lower cards of
 * its suit and is beaten by the unseen higher ones. */
static double danger(const view *v, int card) {
    int s = TRIX_SUIT_OF(card);
    int hi = popc(above(v->unseen, card));
    int lo = popc(below(v->unseen, card));
    double d = TRIX_RANK_OF(card) * 0.5 + lo * 0.6 - hi * 0.8;
    if (hi == 0 && popc(suit_cards(v->unseen, s)) > 0) d += 3; /* a sure winner in that suit */
    /* cards that capture an unseen penalty card of their suit */
    for (uint64_t m = below(v->unseen, card); m; m &= m - 1)
        d += card_penalty(v, lowest(m)) * 0.08;
    /* short suits are dumped soon anyway; long ones keep the card alive */
    d -= 0.3 * popc(suit_cards(v->my, s));
    return d;
}

/* Is `s` on my team (myself or, in partnership, my partner)? */
static int friendly(const view *v, int s) {
    return s == v->seat || (v->partnership && s == trix_partner(v->seat));
}

/* ---- trick play (§4) ----------------------------------------------------------- */

static double follow_cost(const view *v, int card) {
    const trix_game *g = v->g;
    int led = TRIX_SUIT_OF(g->trick_cards[0]);
    int best = 0;
    double now = trick_base(v);
    for (int k = 0; k < g->trick_len; k++) {
        int c = g->trick_cards[k];
        now += card_penalty(v, c);
        if (TRIX_SUIT_OF(c) == led && TRIX_RANK_OF(c) > TRIX_RANK_OF(g->trick_cards[best])) best = k;
    }
    int wcard = g->trick_cards[best];
    int winner = (g->trick_leader + best) & 3;
    int rest = 3 - g->trick_len; /* seats still to play after me */
    double pen = card_penalty(v, card);
    /* a penalty card given away: good if it goes to an opponent */
    double gift_to_winner = friendly(v, winner) ? -1.0 : 1.0;
    if (TRIX_SUIT_OF(card) != led || TRIX_RANK_OF(card) < TRIX_RANK_OF(wcard)) {
        /* §4: this card cannot win the trick: dump it. */
        double gift = rest == 0 ? gift_to_winner : (v->partnership ? 0.4 : 1.0) * gift_to_winner;
        double d = danger(v, card);
        if (TRIX_SUIT_OF(card) == led) d *= 0.6; /* keep it simple: highest under */
        return -(pen * 1.2 * gift) - d;
    }
    /* I currently win the trick with this card. */
    double pwin;
    int hi = popc(above(v->unseen, card));
    if (rest == 0 || hi == 0) {
        pwin = 1.0;
    } else {
        /* later seats void in the suit cannot overtake */
        int can = 0;
        for (int k = 1; k <= rest; k++) {
            int s = (v->seat + k) & 3;
            if (!(v->voids[s] & (1u << led)) && g->hand[s] != 0) can++;
        }
        pwin = can == 0 ? 1.0 : 1.0 / (1.0 + hi * (0.5 + 0.25 * can));
    }
    /* seats after me may dump penalty cards on the winner */
    double dumps = 0;
    for (int k = 1; k <= rest; k++) {
        int s = (v->seat + k) & 3;
        if (v->voids[s] & (1u << led)) dumps += 0.5;
        else if (popc(suit_cards(v->unseen, led)) < 2 * rest) dumps += 0.15;
    }
    double off_pen = unseen_penalty(v, v->unseen & ~TRIX_SUIT_MASK(led));
    double in_pen = unseen_penalty(v, below(v->unseen, card));
    double exp_pen = now + pen + dumps * off_pen * 0.25 + in_pen * 0.35 * rest / 3.0;
    /* winning anyway: shed the highest card; losing later: the card goes away */
    double cost = pwin * exp_pen - (1 - pwin) * pen * (v->partnership ? 0.4 : 1.0);
    cost -= pwin * danger(v, card) * 0.3;
    return cost;
}

static double lead_cost(const view *v, int card) {
    int s = TRIX_SUIT_OF(card);
    uint64_t us = suit_cards(v->unseen, s);
    int n_un = popc(us), hi = popc(above(v->unseen, card)), lo = popc(below(v->unseen, card));
    double pen = card_penalty(v, card);
    int holders = 0, voids = 0;
    for (int k = 1; k <= 3; k++) {
        int o = (v->seat + k) & 3;
        if (v->g->hand[o] == 0) continue; /* hand counts are public */
        if (v->voids[o] & (1u << s)) voids++;
        else holders++;
    }
    double pwin;
    if (n_un == 0 || hi == 0 || holders == 0) {
        pwin = 1.0;
    } else {
        double f = (double)lo / (double)n_un;
        pwin = f * f * 0.9;
    }
    double off_pen = unseen_penalty(v, v->unseen & ~TRIX_SUIT_MASK(s));
    double in_pen = unseen_penalty(v, below(v->unseen, card));
    double dump_factor = voids * 0.4 + (n_un < 3 ? 0.2 : n_un < 6 ? 0.05 : 0.0);
    double exp_pen = trick_base(v) + pen + in_pen * 0.35 + off_pen * dump_factor * 0.3;
    /* flushing: a low lead forces out unseen penalty cards above it */
    double flush = 0;
    if (pwin < 0.5) flush = unseen_penalty(v, above(v->unseen, card)) * 0.12;
    double cost = pwin * exp_pen - (1 - pwin) * (pen * (v->partnership ? 0.5 : 0.9) + flush);
    /* prefer short suits (a void lets me dump later) and low cards */
    cost += 0.35 * popc(suit_cards(v->my, s));
    cost -= 0.05 * (12 - TRIX_RANK_OF(card));
    return cost;
}

/* ---- TRIX layout (§6) ------------------------------------------------------------ */

/* Weights of the layout heuristic (tuned with self-play against RANDOM and
 * LOWEST players). */
#ifndef LAYOUT_NEXT
#define LAYOUT_NEXT 2.0
#endif
#ifndef LAYOUT_MINE
#define LAYOUT_MINE 3.0
#endif
#ifndef LAYOUT_RELEASE
#define LAYOUT_RELEASE 0.3
#endif
#ifndef LAYOUT_RELEASE_PARTNER
#define LAYOUT_RELEASE_PARTNER 0.2
#endif
#ifndef LAYOUT_RUN
#define LAYOUT_RUN 1.0
#endif

/* Cards of suit `s` with rank index in [lo, hi]. */
static uint64_t rank_range(int s, int lo, int hi) {
    if (lo > hi) return 0;
    uint64_t m = ((UINT64_C(1) << (hi - lo + 1)) - 1) << lo;
    return m << (13 * s);
}

static double layout_score(const view *v, int card) {
    const trix_game *g = v->g;
    int s = TRIX_SUIT_OF(card), r = TRIX_RANK_OF(card);
    uint64_t mine_behind, others_behind;
    int next_mine = 0;
    if (r == JACK && g->row_low[s] == TRIX_NO_RANK) {
        uint64_t row = TRIX_SUIT_MASK(s) & ~TRIX_BIT(card);
        mine_behind = v->my & row;
        others_behind = v->unseen & row;
        if (v->my & TRIX_BIT(TRIX_CARD(s, JACK + 1))) next_mine++;
        if (v->my & TRIX_BIT(TRIX_CARD(s, JACK - 1))) next_mine++;
    } else if (r > JACK) {
        uint64_t beyond = rank_range(s, r + 1, ACE);
        mine_behind = v->my & beyond;
        others_behind = v->unseen & beyond;
        if (r < ACE && (v->my & TRIX_BIT(card + 1))) next_mine = 1;
    } else {
        uint64_t beyond = rank_range(s, 0, r - 1);
        mine_behind = v->my & beyond;
        others_behind = v->unseen & beyond;
        if (r > 0 && (v->my & TRIX_BIT(card - 1))) next_mine = 1;
    }
    /* §6: get out early (unlock my own cards), block the others (keep the
     * cards their rows need). In partnership a third of the unseen cards are
     * my partner's: releasing them costs less. */
    double release = v->partnership ? LAYOUT_RELEASE_PARTNER : LAYOUT_RELEASE;
    double score = LAYOUT_NEXT * next_mine + LAYOUT_MINE * popc(mine_behind) - release * popc(others_behind);
    /* the card nearest to what I still need next: play from long runs */
    if (popc(mine_behind) > 0 && popc(others_behind) == 0) score += LAYOUT_RUN;
    return score;
}

/* ---- contract choice (§3) ------------------------------------------------------- */

/* Expected points of this hand in each contract (rough), compared with what
 * an average hand expects; the owner picks the contract that suits the hand
 * best among those not yet played in this kingdom (§3). */
static double hand_fit(const view *v, int contract) {
    uint64_t h = v->my;
    int len[4];
    for (int s = 0; s < 4; s++) len[s] = popc(suit_cards(h, s));
    int shortest = 13;
    for (int s = 0; s < 4; s++)
        if (len[s] < shortest) shortest = len[s];
    double voidish = shortest == 0 ? 1.0 : shortest == 1 ? 0.6 : shortest == 2 ? 0.3 : 0.0;
    double high = 0; /* high-card weight: A=4 K=3 Q=2 J=1 ... */
    for (uint64_t m = h; m; m &= m - 1) {
        int r = TRIX_RANK_OF(lowest(m));
        if (r >= 8) high += (r - 7) * 0.5;
    }
    switch (contract) {
    case TRIX_KING: {
        double risk;
        int hearts = len[TRIX_SUIT_H];
        if (h & TRIX_BIT(TRIX_CARD_KH)) {
            int low = popc(below(h, TRIX_CARD_KH));
            risk = low >= 4 ? 0.2 : low >= 2 ? 0.45 : 0.7;
            risk -= 0.1 * voidish;
        } else {
            risk = 0.15;
            if (h & TRIX_BIT(TRIX_CARD_KH + 1)) risk += hearts <= 2 ? 0.25 : 0.1;
            risk -= 0.03 * (hearts > 3 ? 3 : hearts);
            risk -= 0.05 * voidish;
        }
        if (risk < 0.02) risk = 0.02;
        return -75 * risk - (-75 * 0.25);
    }
    case TRIX_QUEENS: {
        double exp = 0;
        for (int s = 0; s < 4; s++) {
            int q = TRIX_CARD(s, QUEEN);
            if (h & TRIX_BIT(q)) {
                int low = popc(below(h, q));
                exp += 25 * (low >= 3 ? 0.25 : low == 2 ? 0.4 : low == 1 ? 0.6 : 0.75);
            }
            int big = popc(above(h, q));
            if (big && !(h & TRIX_BIT(q))) exp += 25 * 0.2 * big / (1.0 + popc(below(h, q)));
        }
        exp -= 8 * voidish;
        return -exp - (-25);
    }
    case TRIX_DIAMONDS: {
        double exp = 0;
        int n = len[TRIX_SUIT_D];
        for (uint64_t m = suit_cards(h, TRIX_SUIT_D); m; m &= m - 1) exp += 2 + TRIX_RANK_OF(lowest(m));
        exp += high * 1.5;
        exp -= n <= 2 ? 10 * voidish : 0;
        return -exp - (-40);
    }
    case TRIX_TRICKS: {
        double exp = high * 5.5 - 10 * voidish;
        return -exp - (-50);
    }
    case TRIX_TRIX: {
        /* jacks start rows; cards near the jacks come early; 2s and aces last */
        double sc = 0;
        for (uint64_t m = h; m; m &= m - 1) {
            int r = TRIX_RANK_OF(lowest(m));
            int dist = r >= JACK ? r - JACK : JACK - r;
            sc -= dist * 1.5;
            if (r == JACK) sc += 12;
        }
        return sc + 45;
    }
    case TRIX_COMPLEX: {
        double exp = 0;
        exp -= hand_fit(v, TRIX_KING) - 0;
        exp -= hand_fit(v, TRIX_QUEENS);
        exp -= hand_fit(v, TRIX_DIAMONDS);
        exp -= hand_fit(v, TRIX_TRICKS);
        return -exp;
    }
    default: return 0;
    }
}

/* ---- doubling (§7) -------------------------------------------------------------- */

/* Double a card only when it is safe: well protected by lower cards of its
 * suit (I can play under whenever the suit is led) and I hold a short suit to
 * dump it on someone else. Uses only my hand (§14: others' answers may be
 * secret in SIMULTANEOUS mode). */
static int double_answer(const view *v, uint8_t eligible) {
    uint64_t h = v->my;
    int shortest = 13;
    for (int s = 0; s < 4; s++) {
        int l = popc(suit_cards(h, s));
        if (l < shortest) shortest = l;
    }
    int mask = 0;
    for (int b = 0; b < 5; b++) {
        if (!(eligible & (1u << b))) continue;
        int card = trix_double_bit_card(b);
        int low = popc(below(h, card));
        int small = popc(below(h, card) & rank_range(TRIX_SUIT_OF(card), 0, 6)); /* 2..8 */
        int need = card == TRIX_CARD_KH ? 4 : 3;
        if (low >= need && small >= need - 1 && shortest <= 2) mask |= 1 << b;
    }
    return TRIX_ACTION_DOUBLE_BASE + mask;
}

/* ---- choice with tie-break -------------------------------------------------------- */

static int pick_min(const double *cost, const uint8_t *acts, int n, uint64_t *rng) {
    double best = cost[0];
    for (int i = 1; i < n; i++)
        if (cost[i] < best) best = cost[i];
    uint8_t ties[TRIX_MAX_ACTIONS];
    int nt = 0;
    for (int i = 0; i < n; i++)
        if (cost[i] <= best + 1e-9) ties[nt++] = acts[i];
    if (nt == 1 || !rng) return ties[0];
    return ties[trix_rng_below(rng, (uint32_t)nt)];
}

int trix_bot_action(const trix_game *g, int seat, uint64_t *rng_state) {
    uint8_t acts[TRIX_MAX_ACTIONS];
    double cost[TRIX_MAX_ACTIONS] = {0};
    if (!g) return -1;
    int n = trix_legal_actions(g, seat, acts);
    if (n == 0) return -1;
    if (n == 1) return acts[0];
    view v;
    make_view(&v, g, seat);
    int choice = acts[0];
    switch (g->phase) {
    case TRIX_PHASE_CHOOSE_CONTRACT:
        for (int i = 0; i < n; i++) cost[i] = -hand_fit(&v, acts[i] - TRIX_ACTION_CHOOSE_BASE);
        choice = pick_min(cost, acts, n, rng_state);
        break;
    case TRIX_PHASE_DOUBLING:
        choice = double_answer(&v, trix_eligible_doubles(g, seat));
        break;
    case TRIX_PHASE_PLAY:
        for (int i = 0; i < n; i++) {
            if (g->contract == TRIX_TRIX)
                cost[i] = -layout_score(&v, acts[i]);
            else if (g->trick_len == 0)
                cost[i] = lead_cost(&v, acts[i]);
            else
                cost[i] = follow_cost(&v, acts[i]);
        }
        choice = pick_min(cost, acts, n, rng_state);
        break;
    default: break;
    }
    /* must always be legal: fall back to the first legal action otherwise */
    for (int i = 0; i < n; i++)
        if (acts[i] == choice) return choice;
    return acts[0];
}
