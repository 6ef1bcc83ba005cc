/*
 * test_engine.c: C unit tests of the rules engine, one per rule (docs/rules.md).
 * Built and run by `make test-c` (and under sanitizers by `make asan`).
 * No framework: each test is a function; CHECK prints and counts failures.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trix_engine.h"

static int failures = 0;
static int checks = 0;
#define CHECK(cond)                                                          \
    do {                                                                     \
        checks++;                                                            \
        if (!(cond)) {                                                       \
            failures++;                                                      \
            fprintf(stderr, "%s:%d: %s: CHECK(%s)\n", __FILE__, __LINE__, __func__, #cond); \
        }                                                                    \
    } while (0)
#define CHECK_EQ(a, b)                                                       \
    do {                                                                     \
        long long a_ = (long long)(a), b_ = (long long)(b);                  \
        checks++;                                                            \
        if (a_ != b_) {                                                      \
            failures++;                                                      \
            fprintf(stderr, "%s:%d: %s: %s == %lld, expected %lld\n", __FILE__, __LINE__, \
                    __func__, #a, a_, b_);                                   \
        }                                                                    \
    } while (0)

static trix_event ev[TRIX_MAX_EVENTS];
static int nev;

static int card(const char *t) {
    static const char *ranks = "23456789TJQKA", *suits = "CDHS";
    const char *r = strchr(ranks, t[0]), *s = strchr(suits, t[1]);
    if (!r || !s) {
        fprintf(stderr, "bad card %s\n", t);
        exit(2);
    }
    return (int)(s - suits) * 13 + (int)(r - ranks);
}

/* Hands from space-separated card lists; the rest is filled in id order,
 * seat 0 first, up to 13 cards each. */
static void make_deck(const char *spec[4], uint64_t m[4]) {
    uint64_t used = 0;
    for (int s = 0; s < 4; s++) {
        m[s] = 0;
        const char *p = spec[s];
        while (p && *p) {
            while (*p == ' ') p++;
            if (!*p) break;
            int c = card(p);
            m[s] |= TRIX_BIT(c);
            used |= TRIX_BIT(c);
            p += 2;
        }
    }
    for (int s = 0; s < 4; s++)
        for (int c = 0; c < 52 && __builtin_popcountll(m[s]) < 13; c++)
            if (!(used & TRIX_BIT(c))) {
                m[s] |= TRIX_BIT(c);
                used |= TRIX_BIT(c);
            }
}

static void start(trix_game *g, int variant, const trix_options *o, const char *h0, const char *h1,
                  const char *h2, const char *h3) {
    const char *spec[4] = {h0, h1, h2, h3};
    uint64_t m[4];
    make_deck(spec, m);
    CHECK_EQ(trix_init(g, variant, o), TRIX_OK);
    CHECK_EQ(trix_provide_deal_masks(g, m, ev, TRIX_MAX_EVENTS, &nev), TRIX_OK);
}

static trix_status act(trix_game *g, int seat, int action) {
    return trix_apply(g, seat, action, ev, TRIX_MAX_EVENTS, &nev);
}

static int has_event(int kind) {
    for (int i = 0; i < nev; i++)
        if (ev[i].kind == kind) return 1;
    return 0;
}

/* -------------------------------------------------------------------------- */

static void test_first_kingdom_owned_by_7h_holder_of_first_deal(void) {
    trix_game g;
    start(&g, TRIX_VARIANT_TRIX, NULL, "", "", "7H", "");
    CHECK_EQ(g.owner, 2);
    CHECK_EQ(g.phase, TRIX_PHASE_CHOOSE_CONTRACT);
    CHECK_EQ(ev[0].kind, TRIX_EV_DEAL_STARTED);
    CHECK_EQ(ev[0].seat, 2);
    uint8_t seats[4];
    CHECK_EQ(trix_to_act(&g, seats), 1);
    CHECK_EQ(seats[0], 2);
}

static void test_each_kingdom_owned_by_next_of_previous_owner(void) {
    trix_game g;
    trix_init(&g, TRIX_VARIANT_COMPLEX, NULL);
    uint8_t pol[4] = {TRIX_POLICY_LOWEST, TRIX_POLICY_LOWEST, TRIX_POLICY_LOWEST, TRIX_POLICY_LOWEST};
    uint32_t moves;
    CHECK_EQ(trix_playout(&g, pol, 42, &moves), TRIX_OK);
    for (int d = 0; d < 8; d++) CHECK_EQ(g.hist[d].owner, (g.first_owner + d / 2) % 4);
}

static void test_contract_not_in_variant_is_rejected(void) {
    trix_game g;
    start(&g, TRIX_VARIANT_COMPLEX, NULL, "7H", "", "", "");
    trix_game before = g;
    CHECK_EQ(act(&g, 0, TRIX_ACTION_CHOOSE_BASE + TRIX_KING), TRIX_E_CONTRACT_NOT_IN_VARIANT);
    CHECK(memcmp(&g, &before, sizeof g) == 0);
    uint8_t acts[TRIX_MAX_ACTIONS];
    CHECK_EQ(trix_legal_actions(&g, 0, acts), 2);
    CHECK_EQ(acts[0], 52 + TRIX_TRIX);
    CHECK_EQ(acts[1], 52 + TRIX_COMPLEX);
}

static void test_contract_already_played_in_kingdom_is_rejected(void) {
    trix_game g;
    trix_options o = trix_default_options();
    o.doubling = 0;
    start(&g, TRIX_VARIANT_TRIX, &o, "7H", "", "", "");
    CHECK_EQ(act(&g, 0, 52 + TRIX_TRICKS), TRIX_OK);
    uint8_t pol[4] = {TRIX_POLICY_LOWEST, TRIX_POLICY_LOWEST, TRIX_POLICY_LOWEST, TRIX_POLICY_LOWEST};
    /* finish this deal by hand with the lowest legal card */
    while (g.phase == TRIX_PHASE_PLAY) CHECK_EQ(act(&g, g.turn, __builtin_ctzll(trix_legal_cards(&g, g.turn))), TRIX_OK);
    CHECK_EQ(g.phase, TRIX_PHASE_AWAITING_DEAL);
    const char *spec[4] = {"", "", "", ""};
    uint64_t m[4];
    make_deck(spec, m);
    CHECK_EQ(trix_provide_deal_masks(&g, m, ev, TRIX_MAX_EVENTS, &nev), TRIX_OK);
    CHECK_EQ(g.owner, 0);
    CHECK_EQ(act(&g, 0, 52 + TRIX_TRICKS), TRIX_E_CONTRACT_ALREADY_PLAYED);
    CHECK_EQ(act(&g, 1, 52 + TRIX_KING), TRIX_E_NOT_YOUR_TURN);
    (void)pol;
}

static void test_follow_suit_when_holding_led_suit(void) {
    trix_game g;
    trix_options o = trix_default_options();
    o.doubling = 0;
    start(&g, TRIX_VARIANT_TRIX, &o, "7H 2C", "3C 4D", "", "");
    act(&g, 0, 52 + TRIX_TRICKS);
    CHECK_EQ(act(&g, 0, card("2C")), TRIX_OK);
    trix_game before = g;
    CHECK_EQ(act(&g, 1, card("4D")), TRIX_E_MUST_FOLLOW_SUIT);
    CHECK(memcmp(&g, &before, sizeof g) == 0);
    CHECK_EQ(act(&g, 2, card("4D")), TRIX_E_NOT_YOUR_TURN);
    CHECK_EQ(act(&g, 1, card("AS")), TRIX_E_NOT_IN_HAND);
    CHECK_EQ(act(&g, 1, card("3C")), TRIX_OK);
}

static void test_void_seat_may_play_any_card_even_kh(void) {
    /* seat 1 has no clubs: anything goes, KH included (§4, seed 002) */
    trix_game g;
    trix_options o = trix_default_options();
    o.doubling = 0;
    start(&g, TRIX_VARIANT_TRIX, &o, "7H 3C 4C 5C 6C 7C 8C 9C TC JC QC KC AC", "KH", "2C", "");
    act(&g, 0, 52 + TRIX_KING);
    CHECK_EQ(act(&g, 0, card("3C")), TRIX_OK);
    CHECK_EQ(trix_legal_cards(&g, 1), g.hand[1]);
    CHECK_EQ(act(&g, 1, card("KH")), TRIX_OK);
}

static void test_king_of_hearts_costs_75_and_king_ends_after_its_trick(void) {
    trix_game g;
    trix_options o = trix_default_options();
    o.doubling = 0;
    start(&g, TRIX_VARIANT_TRIX, &o, "7H 2H", "AH", "KH", "3H");
    act(&g, 0, 52 + TRIX_KING);
    CHECK_EQ(act(&g, 0, card("2H")), TRIX_OK);
    CHECK_EQ(act(&g, 1, card("AH")), TRIX_OK);
    CHECK_EQ(act(&g, 2, card("KH")), TRIX_OK);
    CHECK_EQ(act(&g, 3, card("3H")), TRIX_OK);
    CHECK(has_event(TRIX_EV_TRICK_TAKEN));
    CHECK(has_event(TRIX_EV_DEAL_SCORED));
    CHECK_EQ(g.hist[0].scores[1], -75);
    CHECK_EQ(g.totals[1], -75);
    CHECK_EQ(g.deal_index, 1);
    CHECK_EQ(g.phase, TRIX_PHASE_AWAITING_DEAL);
}

static trix_game king_doubled_by(int doubler, int self_take, const char *h1, const char *h2,
                                 const char *lead1, const char *play2) {
    trix_game g;
    trix_options o = trix_default_options();
    o.doubling_self_take = (uint8_t)self_take;
    start(&g, TRIX_VARIANT_TRIX, &o, "7H 2H", h1, h2, "3H");
    act(&g, 0, 52 + TRIX_KING);
    CHECK_EQ(g.phase, TRIX_PHASE_DOUBLING);
    for (int i = 0; i < 4; i++) {
        int s = i;
        int a = s == doubler ? 64 + TRIX_DBL_KH : 64;
        CHECK_EQ(act(&g, s, a), TRIX_OK);
    }
    CHECK_EQ(g.phase, TRIX_PHASE_PLAY);
    CHECK_EQ(act(&g, 0, card("2H")), TRIX_OK);
    CHECK_EQ(act(&g, 1, card(lead1)), TRIX_OK);
    CHECK_EQ(act(&g, 2, card(play2)), TRIX_OK);
    CHECK_EQ(act(&g, 3, card("3H")), TRIX_OK);
    return g;
}

static void test_doubled_king_taken_by_other_seat_costs_150(void) {
    /* seat 2 doubles KH, seat 1 takes it: -150 for seat 1, +75 for seat 2 */
    trix_game g = king_doubled_by(2, TRIX_SELF_TAKE_NOBODY, "AH", "KH", "AH", "KH");
    CHECK_EQ(g.hist[0].scores[1], -150);
    CHECK_EQ(g.hist[0].scores[2], 75);
    CHECK_EQ(g.hist[0].scores[0], 0);
    CHECK_EQ(g.hist[0].scores[3], 0);
}

static void test_doubled_king_self_take_nobody_gains(void) {
    trix_game g = king_doubled_by(2, TRIX_SELF_TAKE_NOBODY, "4H", "KH", "4H", "KH");
    CHECK_EQ(g.hist[0].scores[2], -150);
    CHECK_EQ(g.hist[0].scores[0] + g.hist[0].scores[1] + g.hist[0].scores[3], 0);
}

static void test_doubled_king_self_take_leader_gives_leader_75(void) {
    trix_game g = king_doubled_by(2, TRIX_SELF_TAKE_LEADER, "4H", "KH", "4H", "KH");
    CHECK_EQ(g.hist[0].scores[2], -150);
    CHECK_EQ(g.hist[0].scores[0], 75); /* seat 0 led the trick */
}

static void test_doubling_every_seat_answers_once_in_turn_from_owner(void) {
    trix_game g;
    start(&g, TRIX_VARIANT_TRIX, NULL, "", "7H", "KH", "");
    CHECK_EQ(g.owner, 1);
    act(&g, 1, 52 + TRIX_KING);
    uint8_t acts[TRIX_MAX_ACTIONS];
    /* a seat without an eligible card can only answer "no double" */
    CHECK_EQ(trix_legal_actions(&g, 1, acts), 1);
    CHECK_EQ(acts[0], 64);
    CHECK_EQ(act(&g, 2, 64), TRIX_E_NOT_YOUR_TURN);
    CHECK_EQ(act(&g, 1, 64 + TRIX_DBL_KH), TRIX_E_NOT_ELIGIBLE_TO_DOUBLE);
    CHECK_EQ(act(&g, 1, 64), TRIX_OK);
    CHECK_EQ(act(&g, 1, 64), TRIX_E_ALREADY_ANSWERED);
    CHECK_EQ(trix_legal_actions(&g, 2, acts), 2);
    CHECK_EQ(act(&g, 2, 64 + TRIX_DBL_QS), TRIX_E_NOT_ELIGIBLE_TO_DOUBLE);
    CHECK_EQ(act(&g, 2, 64 + TRIX_DBL_KH), TRIX_OK);
    CHECK_EQ(act(&g, 3, 64), TRIX_OK);
    CHECK_EQ(g.phase, TRIX_PHASE_DOUBLING);
    CHECK_EQ(act(&g, 0, 64), TRIX_OK);
    CHECK_EQ(g.phase, TRIX_PHASE_PLAY);
    CHECK_EQ(g.hist[0].n_answers, 4);
    CHECK_EQ(g.hist[0].answer_seat[0], 1);
    CHECK_EQ(g.hist[0].answer_seat[3], 0);
}

static void test_simultaneous_doubling_reveals_after_fourth_answer(void) {
    trix_game g;
    trix_options o = trix_default_options();
    o.doubling_reveal = TRIX_REVEAL_SIMULTANEOUS;
    start(&g, TRIX_VARIANT_COMPLEX, &o, "7H QS", "KH", "", "");
    act(&g, 0, 52 + TRIX_COMPLEX);
    uint8_t seats[4];
    CHECK_EQ(trix_to_act(&g, seats), 4);
    CHECK_EQ(act(&g, 3, 64), TRIX_OK);
    CHECK_EQ(trix_to_act(&g, seats), 3);
    CHECK_EQ(act(&g, 1, 64 + TRIX_DBL_KH), TRIX_OK);
    CHECK(!has_event(TRIX_EV_DOUBLES_REVEALED));
    CHECK_EQ(act(&g, 0, 64 + TRIX_DBL_QS), TRIX_OK);
    CHECK_EQ(act(&g, 2, 64), TRIX_OK);
    CHECK(has_event(TRIX_EV_DOUBLES_REVEALED));
    CHECK_EQ(ev[nev - 1].r[1], TRIX_DBL_KH);
    CHECK_EQ(ev[nev - 1].r[0], TRIX_DBL_QS);
    CHECK_EQ(g.phase, TRIX_PHASE_PLAY);
}

static void test_two_doubled_queens_in_one_trick_scored_separately(void) {
    /* QUEENS: seat 1 doubles QH, seat 2 doubles QS, seat 3 takes both */
    trix_game g;
    start(&g, TRIX_VARIANT_TRIX, NULL, "7H 2H", "QH", "QS 2S 3S 4S 5S 6S 7S 8S 9S TS JS KS AS", "AH");
    act(&g, 0, 52 + TRIX_QUEENS);
    CHECK_EQ(act(&g, 0, 64), TRIX_OK);
    CHECK_EQ(act(&g, 1, 64 + TRIX_DBL_QH), TRIX_OK);
    CHECK_EQ(act(&g, 2, 64 + TRIX_DBL_QS), TRIX_OK);
    CHECK_EQ(act(&g, 3, 64), TRIX_OK);
    CHECK_EQ(act(&g, 0, card("2H")), TRIX_OK);
    CHECK_EQ(act(&g, 1, card("QH")), TRIX_OK);
    CHECK_EQ(g.hand[2] & TRIX_SUIT_MASK(TRIX_SUIT_H), 0); /* seat 2 is void in hearts */
    CHECK_EQ(act(&g, 2, card("QS")), TRIX_OK);
    CHECK_EQ(act(&g, 3, card("AH")), TRIX_OK);
    CHECK_EQ(ev[nev - 1].kind, TRIX_EV_TRICK_TAKEN);
    CHECK_EQ(ev[nev - 1].seat, 3);
    CHECK_EQ(ev[nev - 1].v[3], -50 - 50);
    CHECK_EQ(ev[nev - 1].v[1], 25);
    CHECK_EQ(ev[nev - 1].v[2], 25);
}

static void play_lowest_to_end_of_deal(trix_game *g) {
    int d = g->deal_index;
    while (g->phase == TRIX_PHASE_PLAY && g->deal_index == d)
        CHECK_EQ(act(g, g->turn, __builtin_ctzll(trix_legal_cards(g, g->turn))), TRIX_OK);
}

static void test_queens_end_after_fourth_queen_each_minus_25(void) {
    trix_game g;
    trix_options o = trix_default_options();
    o.doubling = 0;
    /* seat 0 holds all queens and the aces: leads its lowest cards, queens fall late */
    start(&g, TRIX_VARIANT_TRIX, &o, "7H", "", "", "");
    act(&g, 0, 52 + TRIX_QUEENS);
    play_lowest_to_end_of_deal(&g);
    int sum = 0;
    for (int s = 0; s < 4; s++) sum += g.hist[0].scores[s];
    CHECK_EQ(sum, 4 * -25);
    CHECK_EQ(g.queens_taken, 4);
    CHECK(g.hist[0].n_plays <= 52);
}

static void test_diamonds_end_after_thirteenth_diamond_each_minus_10(void) {
    trix_game g;
    trix_options o = trix_default_options();
    o.doubling = 0;
    start(&g, TRIX_VARIANT_TRIX, &o, "7H", "", "", "");
    act(&g, 0, 52 + TRIX_DIAMONDS);
    play_lowest_to_end_of_deal(&g);
    int sum = 0;
    for (int s = 0; s < 4; s++) sum += g.hist[0].scores[s];
    CHECK_EQ(sum, -130);
    CHECK_EQ(g.diamonds_taken, 13);
}

static void test_tricks_play_all_13_each_minus_15(void) {
    trix_game g;
    trix_options o = trix_default_options();
    o.doubling = 0;
    start(&g, TRIX_VARIANT_TRIX, &o, "7H", "", "", "");
    act(&g, 0, 52 + TRIX_TRICKS);
    play_lowest_to_end_of_deal(&g);
    CHECK_EQ(g.hist[0].n_plays, 52);
    int sum = 0;
    for (int s = 0; s < 4; s++) sum += g.hist[0].scores[s];
    CHECK_EQ(sum, -195);
}

static void test_undoubled_complex_deal_sums_minus_500_qd_queen_and_diamond(void) {
    for (uint64_t seed = 1; seed < 200; seed++) {
        trix_game g;
        trix_options o = trix_default_options();
        o.doubling = 0;
        trix_init(&g, TRIX_VARIANT_COMPLEX, &o);
        uint8_t pol[4] = {0, 0, 0, 0};
        uint32_t moves;
        CHECK_EQ(trix_playout(&g, pol, seed, &moves), TRIX_OK);
        for (int d = 0; d < 8; d++) {
            int sum = 0;
            for (int s = 0; s < 4; s++) sum += g.hist[d].scores[s];
            CHECK_EQ(sum, g.hist[d].contract == TRIX_COMPLEX ? -500 : 500);
        }
        /* §6: an undoubled kingdom sums to zero */
        int total = 0;
        for (int s = 0; s < 4; s++) total += g.totals[s];
        CHECK_EQ(total, 0);
    }
}

static void test_undoubled_trix_variant_kingdom_sums_zero(void) {
    for (uint64_t seed = 1; seed < 200; seed++) {
        trix_game g;
        trix_options o = trix_default_options();
        o.doubling = 0;
        trix_init(&g, (int)(seed % 2 ? TRIX_VARIANT_TRIX : TRIX_VARIANT_TRIX_PARTNERSHIP), &o);
        uint8_t pol[4] = {0, 1, 0, 1};
        uint32_t moves;
        CHECK_EQ(trix_playout(&g, pol, seed, &moves), TRIX_OK);
        for (int k = 0; k < 4; k++) {
            int sum = 0;
            for (int d = 5 * k; d < 5 * k + 5; d++)
                for (int s = 0; s < 4; s++) sum += g.hist[d].scores[s];
            CHECK_EQ(sum, 0);
        }
    }
}

static void test_trix_layout_jack_starts_row_and_rows_grow_by_one(void) {
    trix_game g;
    trix_options o = trix_default_options();
    start(&g, TRIX_VARIANT_TRIX, &o, "7H JC TC", "QC", "", "");
    act(&g, 0, 52 + TRIX_TRIX);
    CHECK_EQ(g.turn, 0);
    CHECK_EQ(act(&g, 0, card("TC")), TRIX_E_NOT_PLAYABLE_ON_LAYOUT);
    CHECK_EQ(act(&g, 0, card("JC")), TRIX_OK);
    CHECK_EQ(g.row_low[0], 9);
    CHECK(trix_legal_cards(&g, g.turn) != 0);
}

static void test_trix_owner_without_jack_passes_and_places_score(void) {
    /* §6: the owner has no legal card at the start: he passes automatically */
    trix_game g;
    start(&g, TRIX_VARIANT_TRIX, NULL, "7H 2C 3C", "JC JD JH JS", "", "");
    CHECK_EQ(act(&g, 0, 52 + TRIX_TRIX), TRIX_OK);
    CHECK_EQ(ev[1].kind, TRIX_EV_SEAT_PASSED);
    CHECK_EQ(ev[1].seat, 0);
    CHECK_EQ(g.turn, 1);
    play_lowest_to_end_of_deal(&g);
    int placed[5] = {0, 0, 0, 0, 0};
    int32_t sum = 0;
    for (int s = 0; s < 4; s++) sum += g.hist[0].scores[s];
    CHECK_EQ(sum, 200 + 150 + 100 + 50);
    for (int i = 0; i < 4; i++) placed[i] = g.out[i];
    CHECK(placed[0] != placed[1]);
}

static void test_partnership_trix_early_end_when_first_two_out_are_partners(void) {
    int seen = 0;
    for (uint64_t seed = 1; seed < 400 && seen < 5; seed++) {
        trix_game g;
        trix_init(&g, TRIX_VARIANT_TRIX_PARTNERSHIP, NULL);
        uint8_t pol[4] = {0, 0, 0, 0};
        uint32_t moves;
        CHECK_EQ(trix_playout(&g, pol, seed, &moves), TRIX_OK);
        /* re-play the first TRIX deal to inspect who went out */
        for (int d = 0; d < 20; d++) {
            if (g.hist[d].contract != TRIX_TRIX) continue;
            int32_t sc[4];
            memcpy(sc, g.hist[d].scores, sizeof sc);
            int n200 = 0, n150 = 0;
            for (int s = 0; s < 4; s++) {
                n200 += sc[s] == 200;
                n150 += sc[s] == 150;
            }
            CHECK_EQ(n200, 1);
            CHECK_EQ(n150, 1);
            int a = -1, b = -1;
            for (int s = 0; s < 4; s++) {
                if (sc[s] == 200) a = s;
                if (sc[s] == 150) b = s;
            }
            if (a >= 0 && b == trix_partner(a)) {
                seen++;
                /* the deal ended with cards left in the other two hands */
                CHECK(g.hist[d].n_plays < 52);
            }
        }
    }
    CHECK(seen > 0);
}

static void test_partnership_early_end_equal_counts_next_of_second_out_gets_100(void) {
    /* Seats 0 and 2 empty first; 1 and 3 keep equal counts. Build a tiny layout game:
     * seat 0: JC..; deterministic LOWEST play and check the 100/50 rule directly. */
    for (uint64_t seed = 1; seed < 3000; seed++) {
        trix_game g;
        trix_init(&g, TRIX_VARIANT_TRIX_PARTNERSHIP, NULL);
        uint8_t pol[4] = {0, 0, 0, 0};
        uint32_t moves;
        trix_playout(&g, pol, seed, &moves);
        for (int d = 0; d < 20; d++) {
            const trix_deal_record *h = &g.hist[d];
            if (h->contract != TRIX_TRIX) continue;
            int first = -1, second = -1;
            for (int s = 0; s < 4; s++) {
                if (h->scores[s] == 200) first = s;
                if (h->scores[s] == 150) second = s;
            }
            if (second != trix_partner(first)) continue;
            /* count remaining cards of the other two at the end */
            uint64_t left[4];
            for (int s = 0; s < 4; s++) left[s] = g.deck[d][s];
            for (int i = 0; i < h->n_plays; i++)
                for (int s = 0; s < 4; s++) left[s] &= ~TRIX_BIT(h->plays[i]);
            int x = trix_next(second), y = trix_partner(x);
            int cx = __builtin_popcountll(left[x]), cy = __builtin_popcountll(left[y]);
            int hundred = cx < cy ? x : cy < cx ? y : x;
            CHECK_EQ(h->scores[hundred], 100);
            CHECK_EQ(h->scores[trix_partner(hundred)], 50);
        }
    }
}

static void test_singles_ranking_shares_places_1_1_3_4(void) {
    trix_game g;
    trix_init(&g, TRIX_VARIANT_TRIX, NULL);
    uint8_t pol[4] = {1, 1, 1, 1};
    uint32_t moves;
    trix_playout(&g, pol, 3, &moves);
    CHECK_EQ(g.phase, TRIX_PHASE_GAME_OVER);
    /* recompute from totals */
    for (int s = 0; s < 4; s++) {
        int place = 1;
        for (int t = 0; t < 4; t++) place += g.totals[t] > g.totals[s];
        CHECK_EQ(g.ranking[s], place);
    }
}

static void test_leave_ranks_leaver_last_others_by_finished_deals(void) {
    trix_game g;
    trix_options o = trix_default_options();
    o.doubling = 0;
    start(&g, TRIX_VARIANT_TRIX, &o, "7H", "", "", "");
    act(&g, 0, 52 + TRIX_TRICKS);
    play_lowest_to_end_of_deal(&g);
    int32_t totals[4];
    memcpy(totals, g.totals, sizeof totals);
    CHECK_EQ(trix_leave(&g, 2, ev, TRIX_MAX_EVENTS, &nev), TRIX_OK);
    CHECK_EQ(g.phase, TRIX_PHASE_GAME_OVER);
    CHECK_EQ(g.ranking[2], 4);
    CHECK_EQ(ev[0].kind, TRIX_EV_SEAT_LEFT);
    CHECK_EQ(ev[1].kind, TRIX_EV_GAME_ENDED);
    for (int s = 0; s < 4; s++) {
        if (s == 2) continue;
        int place = 1;
        for (int t = 0; t < 4; t++) place += t != 2 && totals[t] > totals[s];
        CHECK_EQ(g.ranking[s], place);
    }
    CHECK_EQ(trix_leave(&g, 1, ev, TRIX_MAX_EVENTS, &nev), TRIX_E_GAME_OVER);
    CHECK_EQ(act(&g, 0, 52), TRIX_E_GAME_OVER);
}

static void test_leave_in_partnership_ranks_leaver_team_second(void) {
    trix_game g;
    start(&g, TRIX_VARIANT_COMPLEX_PARTNERSHIP, NULL, "7H", "", "", "");
    CHECK_EQ(trix_leave(&g, 3, ev, TRIX_MAX_EVENTS, &nev), TRIX_OK);
    CHECK_EQ(g.ranking[1], 2);
    CHECK_EQ(g.ranking[3], 2);
    CHECK_EQ(g.ranking[0], 1);
    CHECK_EQ(g.ranking[2], 1);
}

static void test_partnership_tiebreak_shared_and_last_trix(void) {
    /* Force equal team totals by construction: fake totals then rank. */
    for (uint64_t seed = 1; seed < 50; seed++) {
        trix_game g;
        trix_options o = trix_default_options();
        o.doubling = 0;
        trix_init(&g, TRIX_VARIANT_COMPLEX_PARTNERSHIP, &o);
        uint8_t pol[4] = {0, 0, 0, 0};
        uint32_t moves;
        trix_playout(&g, pol, seed, &moves);
        int32_t t0 = g.totals[0] + g.totals[2], t1 = g.totals[1] + g.totals[3];
        if (t0 == t1) {
            CHECK_EQ(g.ranking[g.last_trix_first_out], 1);
            CHECK_EQ(g.ranking[trix_next(g.last_trix_first_out)], 2);
        } else {
            CHECK_EQ(g.ranking[0], t0 > t1 ? 1 : 2);
        }
    }
}

static void test_awaiting_deal_until_deck_provided_and_bad_deck_rejected(void) {
    trix_game g;
    trix_init(&g, TRIX_VARIANT_TRIX, NULL);
    CHECK_EQ(g.phase, TRIX_PHASE_AWAITING_DEAL);
    uint8_t acts[TRIX_MAX_ACTIONS];
    CHECK_EQ(trix_legal_actions(&g, 0, acts), 0);
    uint64_t m[4] = {0x1FFF, 0x1FFF, 0, 0};
    CHECK_EQ(trix_provide_deal_masks(&g, m, ev, TRIX_MAX_EVENTS, &nev), TRIX_E_BAD_DECK);
    uint8_t hands[4][13];
    for (int s = 0; s < 4; s++)
        for (int i = 0; i < 13; i++) hands[s][i] = (uint8_t)(s * 13 + i);
    hands[3][12] = 0; /* duplicate */
    CHECK_EQ(trix_provide_deal(&g, (const uint8_t(*)[13])hands, ev, TRIX_MAX_EVENTS, &nev), TRIX_E_BAD_DECK);
    hands[3][12] = 51;
    CHECK_EQ(trix_provide_deal(&g, (const uint8_t(*)[13])hands, ev, TRIX_MAX_EVENTS, &nev), TRIX_OK);
    CHECK_EQ(g.phase, TRIX_PHASE_CHOOSE_CONTRACT);
    CHECK_EQ(g.owner, 2);
}

static void test_bad_seat_and_bad_action_are_statuses_not_crashes(void) {
    trix_game g;
    start(&g, TRIX_VARIANT_TRIX, NULL, "7H", "", "", "");
    CHECK_EQ(act(&g, 4, 52), TRIX_E_BAD_SEAT);
    CHECK_EQ(act(&g, -1, 52), TRIX_E_BAD_SEAT);
    CHECK_EQ(act(&g, 0, 60), TRIX_E_BAD_ACTION);
    CHECK_EQ(act(&g, 0, 96), TRIX_E_BAD_ACTION);
    CHECK_EQ(act(&g, 0, -5), TRIX_E_BAD_ACTION);
    CHECK_EQ(act(&g, 0, 3), TRIX_E_WRONG_PHASE);
    CHECK_EQ(act(&g, 0, 64), TRIX_E_WRONG_PHASE);
    CHECK_EQ(trix_apply(&g, 0, 52, ev, 2, &nev), TRIX_E_BUFFER);
}

static void test_snapshot_round_trip_is_bit_exact_and_corruption_rejected(void) {
    for (uint64_t seed = 1; seed < 60; seed++) {
        trix_game g;
        trix_options o = trix_default_options();
        o.doubling_reveal = (uint8_t)(seed & 1);
        trix_init(&g, (int)(seed % 4), &o);
        /* play a random prefix of the game */
        uint64_t rng = seed;
        uint32_t stop = trix_rng_below(&rng, 600);
        for (uint32_t i = 0; i < stop && g.phase != TRIX_PHASE_GAME_OVER; i++) {
            if (g.phase == TRIX_PHASE_AWAITING_DEAL) {
                if (trix_rng_below(&rng, 10) == 0) break;
                uint8_t pol[4] = {0, 0, 0, 0};
                trix_game tmp = g;
                uint32_t mv;
                trix_playout(&tmp, pol, seed, &mv); /* just to get a deck generator */
                uint64_t m[4];
                for (int s = 0; s < 4; s++) m[s] = tmp.deck[g.deal_index][s];
                trix_provide_deal_masks(&g, m, ev, TRIX_MAX_EVENTS, &nev);
                continue;
            }
            uint8_t seats[4], acts[TRIX_MAX_ACTIONS];
            trix_to_act(&g, seats);
            int n = trix_legal_actions(&g, seats[0], acts);
            CHECK(n > 0);
            CHECK_EQ(act(&g, seats[0], acts[trix_rng_below(&rng, (uint32_t)n)]), TRIX_OK);
        }
        if (seed % 7 == 0 && g.phase != TRIX_PHASE_GAME_OVER) trix_leave(&g, (int)(seed % 4), ev, TRIX_MAX_EVENTS, &nev);
        uint8_t buf[TRIX_SNAPSHOT_MAX], buf2[TRIX_SNAPSHOT_MAX];
        size_t len, len2;
        CHECK_EQ(trix_snapshot(&g, buf, sizeof buf, &len), TRIX_OK);
        trix_game r;
        CHECK_EQ(trix_restore(&r, buf, len), TRIX_OK);
        CHECK(memcmp(&r, &g, sizeof g) == 0);
        CHECK_EQ(trix_snapshot(&r, buf2, sizeof buf2, &len2), TRIX_OK);
        CHECK_EQ(len2, len);
        CHECK(memcmp(buf, buf2, len) == 0);
        /* truncated and bit-flipped inputs are rejected */
        CHECK_EQ(trix_restore(&r, buf, len - 1), TRIX_E_CORRUPT);
        for (size_t i = 0; i < len; i += 7) {
            buf[i] ^= 0x10;
            CHECK_EQ(trix_restore(&r, buf, len), TRIX_E_CORRUPT);
            buf[i] ^= 0x10;
        }
        CHECK_EQ(trix_restore(&r, buf, 0), TRIX_E_CORRUPT);
    }
}

static void test_playout_all_variants_all_policies(void) {
    for (int v = 0; v < 4; v++)
        for (int p = 0; p < 3; p++)
            for (uint64_t seed = 0; seed < 20; seed++) {
                trix_game g;
                trix_options o = trix_default_options();
                o.doubling_reveal = (uint8_t)(seed & 1);
                o.doubling_self_take = (uint8_t)((seed >> 1) & 1);
                o.team_tiebreak = (uint8_t)((seed >> 2) & 1);
                trix_init(&g, v, &o);
                uint8_t pol[4] = {(uint8_t)p, (uint8_t)p, (uint8_t)p, (uint8_t)p};
                uint32_t moves;
                CHECK_EQ(trix_playout(&g, pol, seed, &moves), TRIX_OK);
                CHECK_EQ(g.phase, TRIX_PHASE_GAME_OVER);
                CHECK_EQ(g.n_deals_started, g.num_deals);
                int32_t sum[4] = {0, 0, 0, 0};
                for (int d = 0; d < g.num_deals; d++)
                    for (int s = 0; s < 4; s++) sum[s] += g.hist[d].scores[s];
                for (int s = 0; s < 4; s++) CHECK_EQ(sum[s], g.totals[s]);
            }
}

int main(void) {
    test_first_kingdom_owned_by_7h_holder_of_first_deal();
    test_each_kingdom_owned_by_next_of_previous_owner();
    test_contract_not_in_variant_is_rejected();
    test_contract_already_played_in_kingdom_is_rejected();
    test_follow_suit_when_holding_led_suit();
    test_void_seat_may_play_any_card_even_kh();
    test_king_of_hearts_costs_75_and_king_ends_after_its_trick();
    test_doubled_king_taken_by_other_seat_costs_150();
    test_doubled_king_self_take_nobody_gains();
    test_doubled_king_self_take_leader_gives_leader_75();
    test_doubling_every_seat_answers_once_in_turn_from_owner();
    test_simultaneous_doubling_reveals_after_fourth_answer();
    test_two_doubled_queens_in_one_trick_scored_separately();
    test_queens_end_after_fourth_queen_each_minus_25();
    test_diamonds_end_after_thirteenth_diamond_each_minus_10();
    test_tricks_play_all_13_each_minus_15();
    test_undoubled_complex_deal_sums_minus_500_qd_queen_and_diamond();
    test_undoubled_trix_variant_kingdom_sums_zero();
    test_trix_layout_jack_starts_row_and_rows_grow_by_one();
    test_trix_owner_without_jack_passes_and_places_score();
    test_partnership_trix_early_end_when_first_two_out_are_partners();
    test_partnership_early_end_equal_counts_next_of_second_out_gets_100();
    test_singles_ranking_shares_places_1_1_3_4();
    test_leave_ranks_leaver_last_others_by_finished_deals();
    test_leave_in_partnership_ranks_leaver_team_second();
    test_partnership_tiebreak_shared_and_last_trix();
    test_awaiting_deal_until_deck_provided_and_bad_deck_rejected();
    test_bad_seat_and_bad_action_are_statuses_not_crashes();
    test_snapshot_round_trip_is_bit_exact_and_corruption_rejected();
    test_playout_all_variants_all_policies();
    printf("test_engine: %d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
