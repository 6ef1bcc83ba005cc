/* bench_playout.c: whole-game playouts per second inside C (`make bench-c`). */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <time.h>

#include "trix_engine.h"

int main(void) {
    static const char *names[3] = {"RANDOM", "LOWEST", "BOT"};
    for (int p = 0; p < 3; p++) {
        for (int v = 0; v < 4; v += 2) {
            struct timespec a, b;
            uint64_t moves = 0;
            int games = 20000;
            clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
            for (int i = 0; i < games; i++) {
                trix_game g;
                trix_init(&g, v, NULL);
                uint8_t pol[4] = {(uint8_t)p, (uint8_t)p, (uint8_t)p, (uint8_t)p};
                uint32_t m = 0;
                if (trix_playout(&g, pol, (uint64_t)i, &m) != TRIX_OK) return 1;
                moves += m;
            }
            clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
            double s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
            printf("%-6s variant %d: %8.0f games/s %6.1f M moves/s\n", names[p], v, games / s, (double)moves / s / 1e6);
        }
    }
    return 0;
}
