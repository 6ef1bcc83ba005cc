/*
 * trix_bot.c: the heuristic bot (RULES.md §9 auto-play and free-table seats).
 *
 * TODO(#2): placeholder only; the bot engineer replaces this file with the
 * real heuristic. It must stay a pure function of what `seat` may see
 * (RULES.md §14) and return a legal action.
 */
#include "trix_engine.h"

int trix_bot_action(const trix_game *g, int seat, uint64_t *rng_state) {
    uint8_t acts[TRIX_MAX_ACTIONS];
    (void)rng_state;
    if (trix_legal_actions(g, seat, acts) == 0) return -1;
    return acts[0];
}
