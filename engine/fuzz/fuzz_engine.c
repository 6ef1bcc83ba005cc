/*
 * fuzz_engine.c: libFuzzer harness for the rules engine (`make fuzz`).
 *
 * Input byte 0 picks the mode:
 *   2 mod 4: the rest is a snapshot body, framed with a valid header and
 *         CRC so restore's field checks and replay are reached;
 *   0 mod 4: restore() of the remaining bytes (arbitrary, mostly corrupt) and,
 *         when accepted, a playout from the restored state;
 *   odd:  a game driven by the bytes: variant/options from the first bytes,
 *         then each byte picks a seat and an action (legal or not) or a
 *         deck; every status must be handled, the state must stay
 *         consistent, and snapshot/restore must round-trip bit-exactly.
 * Without libFuzzer, build with -DTRIX_FUZZ_STANDALONE for a random loop
 * (used by `make asan`).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trix_engine.h"

static void must(int cond, const char *what) {
    if (!cond) {
        fprintf(stderr, "fuzz invariant failed: %s\n", what);
        abort();
    }
}

static void round_trip(const trix_game *g) {
    uint8_t buf[TRIX_SNAPSHOT_MAX], buf2[TRIX_SNAPSHOT_MAX];
    size_t n = 0, n2 = 0;
    trix_game r;
    must(trix_snapshot(g, buf, sizeof buf, &n) == TRIX_OK, "snapshot");
    must(trix_restore(&r, buf, n) == TRIX_OK, "restore of own snapshot");
    must(trix_snapshot(&r, buf2, sizeof buf2, &n2) == TRIX_OK && n2 == n && memcmp(buf, buf2, n) == 0,
         "bit-exact round trip");
}

static void drive(const uint8_t *data, size_t size) {
    if (size < 3) return;
    trix_options o;
    o.doubling = data[1] & 1;
    o.doubling_reveal = (data[1] >> 1) & 1;
    o.doubling_self_take = (data[1] >> 2) & 1;
    o.team_tiebreak = (data[1] >> 3) & 1;
    o.partnership_trix_early_end = (data[1] >> 4) & 1;
    trix_game g;
    must(trix_init(&g, data[2] & 3, &o) == TRIX_OK, "init");
    trix_event ev[TRIX_MAX_EVENTS];
    int nev;
    uint64_t rng = (uint64_t)data[1] << 8 | data[2];
    for (size_t i = 3; i < size; i++) {
        uint8_t b = data[i];
        if (g.phase == TRIX_PHASE_AWAITING_DEAL) {
            uint8_t cards[52];
            for (int c = 0; c < 52; c++) cards[c] = (uint8_t)c;
            rng ^= b;
            for (int c = 51; c > 0; c--) {
                int j = (int)trix_rng_below(&rng, (uint32_t)(c + 1));
                uint8_t t = cards[c];
                cards[c] = cards[j];
                cards[j] = t;
            }
            must(trix_provide_deal(&g, (const uint8_t(*)[13])cards, ev, TRIX_MAX_EVENTS, &nev) == TRIX_OK,
                 "provide deal");
            continue;
        }
        if (b == 0xFF) {
            int st = trix_leave(&g, (int)(rng & 3), ev, TRIX_MAX_EVENTS, &nev);
            must(st == TRIX_OK || st == TRIX_E_GAME_OVER, "leave status");
            continue;
        }
        uint8_t seats[4], acts[TRIX_MAX_ACTIONS];
        int ns = trix_to_act(&g, seats);
        int seat, action;
        if (b & 0x80 || ns == 0) {
            seat = (b >> 5) & 3; /* raw seat/action: mostly illegal */
            action = (int)trix_rng_below(&rng, 100) - 2;
        } else {
            seat = seats[b % ns];
            int n = trix_legal_actions(&g, seat, acts);
            must(n > 0, "a seat to act has a legal action");
            action = acts[(b >> 2) % n];
        }
        trix_game before = g;
        int st = trix_apply(&g, seat, action, ev, TRIX_MAX_EVENTS, &nev);
        if (st != TRIX_OK) {
            must(memcmp(&before, &g, sizeof g) == 0, "illegal action leaves state unchanged");
            must((int)trix_check(&g, seat, action) == st, "check agrees with apply");
        } else {
            must(nev >= 1 && nev <= TRIX_MAX_EVENTS, "event count");
        }
        if ((i & 31) == 0) round_trip(&g);
    }
    round_trip(&g);
    uint8_t pol[4] = {0, 1, 2, 0};
    must(trix_playout(&g, pol, rng, NULL) == TRIX_OK, "playout finishes");
    must(g.phase == TRIX_PHASE_GAME_OVER, "game over after playout");
}

static uint32_t crc32_ieee(const uint8_t *p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return ~c;
}

/* Wrap arbitrary bytes as a snapshot body with a valid header, length and
 * CRC, so the fuzzer reaches restore's field validation and replay. */
static void restore_framed(const uint8_t *body, size_t n) {
    uint8_t buf[TRIX_SNAPSHOT_MAX];
    if (n + 13 > sizeof buf) return;
    memcpy(buf, "TRXS", 4);
    buf[4] = 1;
    uint32_t len = (uint32_t)(n + 13);
    for (int i = 0; i < 4; i++) buf[5 + i] = (uint8_t)(len >> (8 * i));
    memcpy(buf + 9, body, n);
    uint32_t crc = crc32_ieee(buf, n + 9);
    for (int i = 0; i < 4; i++) buf[n + 9 + i] = (uint8_t)(crc >> (8 * i));
    trix_game g;
    if (trix_restore(&g, buf, len) == TRIX_OK) {
        round_trip(&g);
        uint8_t pol[4] = {2, 0, 1, 0};
        must(trix_playout(&g, pol, 7, NULL) == TRIX_OK, "playout after framed restore");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    if ((data[0] & 3) == 2) {
        restore_framed(data + 1, size - 1);
        return 0;
    }
    if ((data[0] & 1) == 0) {
        trix_game g;
        if (trix_restore(&g, data + 1, size - 1) == TRIX_OK) {
            round_trip(&g);
            uint8_t pol[4] = {0, 0, 0, 0};
            must(trix_playout(&g, pol, 1, NULL) == TRIX_OK, "playout after restore");
        }
        return 0;
    }
    drive(data, size);
    return 0;
}

#ifdef TRIX_FUZZ_STANDALONE
/* A random-input loop for builds without libFuzzer (make asan). */
int main(int argc, char **argv) {
    long iters = argc > 1 ? atol(argv[1]) : 2000;
    uint64_t rng = 12345;
    uint8_t buf[4096];
    for (long it = 0; it < iters; it++) {
        size_t n = 1 + trix_rng_below(&rng, sizeof buf - 1);
        for (size_t i = 0; i < n; i++) buf[i] = (uint8_t)trix_rng_next(&rng);
        LLVMFuzzerTestOneInput(buf, n);
        /* also restore valid snapshots with one corrupted byte, CRC fixed up: deep validation */
        trix_game g;
        trix_init(&g, (int)(it & 3), NULL);
        uint8_t pol[4] = {0, 0, 0, 0};
        trix_playout(&g, pol, (uint64_t)it, NULL);
        size_t len;
        trix_snapshot(&g, buf + 1, sizeof buf - 1, &len);
        buf[0] = 0;
        LLVMFuzzerTestOneInput(buf, len + 1);
        /* the same body with one byte changed, re-framed with a valid CRC */
        if (len > 13) {
            uint8_t body[TRIX_SNAPSHOT_MAX];
            size_t bn = len - 13;
            memcpy(body + 1, buf + 1 + 9, bn);
            body[0] = 2;
            body[1 + trix_rng_below(&rng, (uint32_t)bn)] ^= (uint8_t)(1u << trix_rng_below(&rng, 8));
            LLVMFuzzerTestOneInput(body, bn + 1);
        }
    }
    printf("fuzz standalone: %ld iterations ok\n", iters);
    return 0;
}
#endif
