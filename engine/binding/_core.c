/*
 * _core.c: the thin CPython binding of the C rules engine (trix.engine._core).
 *
 * The only file that includes Python.h. Owns argument parsing, status ->
 * IllegalAction/ValueError, and events -> tuples of small ints. Holds no
 * rules: everything is decided by engine/src/trix_engine.c.
 * The public, typed surface is engine/python/__init__.py (docs/engine-api.md).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#include "trix_engine.h"

typedef struct {
    PyObject_HEAD
    trix_game g;
    uint64_t bot_rng; /* per-game bot PRNG state, not part of the rules state */
} GameObject;

/* Module-level caches (binding only; the C core keeps no globals). */
static PyObject *IllegalActionType = NULL; /* set by _register() from Python */
static PyObject *card_played_cache[TRIX_SEATS][TRIX_CARDS];
static PyObject *seat_passed_cache[TRIX_SEATS];
static PyObject *seat_tuple_cache[TRIX_SEATS];
static PyObject *mask_cards_cache[TRIX_DBL_ALL + 1];
static PyObject *empty_tuple = NULL;

static const char RANK_CHARS[] = "23456789TJQKA";
static const char SUIT_CHARS[] = "CDHS";
static const char *const CONTRACT_NAMES[TRIX_NUM_CONTRACTS] = {"KING",   "QUEENS", "DIAMONDS",
                                                                "TRICKS", "TRIX",   "COMPLEX"};

static void card_text(int card, char out[3]) {
    out[0] = RANK_CHARS[card % 13];
    out[1] = SUIT_CHARS[card / 13];
    out[2] = 0;
}

/* ---- errors ------------------------------------------------------------------- */

static PyObject *raise_illegal(int code, const char *msg) {
    if (!IllegalActionType) {
        PyErr_SetString(PyExc_RuntimeError, "trix.engine._core: IllegalAction not registered");
        return NULL;
    }
    PyObject *exc = PyObject_CallFunction(IllegalActionType, "is", code, msg);
    if (!exc) return NULL;
    PyErr_SetObject(IllegalActionType, exc);
    Py_DECREF(exc);
    return NULL;
}

/* Status of a failed apply -> IllegalAction with the docs/engine-api.md text. */
static PyObject *raise_status(const trix_game *g, trix_status st, int seat, int action) {
    char msg[96];
    char c[3];
    int code = (int)st;
    switch (st) {
    case TRIX_E_NOT_YOUR_TURN:
        snprintf(msg, sizeof msg, "not your turn (seat %d to act)", (int)g->turn);
        break;
    case TRIX_E_DEAL_HAS_ENDED:
        code = TRIX_E_WRONG_PHASE;
        snprintf(msg, sizeof msg, "deal has ended");
        break;
    case TRIX_E_WRONG_PHASE:
        if (action < TRIX_CARDS)
            snprintf(msg, sizeof msg, "%s",
                     g->phase == TRIX_PHASE_CHOOSE_CONTRACT ? "no contract chosen yet"
                     : g->phase == TRIX_PHASE_DOUBLING      ? "doubling not finished"
                                                            : "deal not dealt yet");
        else if (action < TRIX_ACTION_DOUBLE_BASE)
            snprintf(msg, sizeof msg, "no contract to choose now");
        else
            snprintf(msg, sizeof msg, "no doubling answer expected now");
        break;
    case TRIX_E_NOT_IN_HAND:
        card_text(action, c);
        snprintf(msg, sizeof msg, "card not in hand (%s)", c);
        break;
    case TRIX_E_MUST_FOLLOW_SUIT:
        snprintf(msg, sizeof msg, "must follow suit (%c)", SUIT_CHARS[TRIX_SUIT_OF(g->trick_cards[0])]);
        break;
    case TRIX_E_NOT_PLAYABLE_ON_LAYOUT:
        card_text(action, c);
        snprintf(msg, sizeof msg, "not playable on the layout (%s)", c);
        break;
    case TRIX_E_CONTRACT_ALREADY_PLAYED:
        snprintf(msg, sizeof msg, "contract already played in this kingdom (%s)",
                 CONTRACT_NAMES[action - TRIX_ACTION_CHOOSE_BASE]);
        break;
    case TRIX_E_CONTRACT_NOT_IN_VARIANT:
        snprintf(msg, sizeof msg, "contract not in this variant (%s)",
                 CONTRACT_NAMES[action - TRIX_ACTION_CHOOSE_BASE]);
        break;
    case TRIX_E_NOT_ELIGIBLE_TO_DOUBLE: {
        int mask = action - TRIX_ACTION_DOUBLE_BASE;
        /* first a card the contract never lets be doubled, then one not held */
        int bad = mask & ~trix_contract_doubles(g->contract);
        if (!bad) bad = mask & ~trix_eligible_doubles(g, seat);
        int card = -1;
        for (int b = 0; b < 5; b++)
            if ((bad & (1 << b)) && (card < 0 || trix_double_bit_card(b) < card))
                card = trix_double_bit_card(b);
        card_text(card < 0 ? 0 : card, c);
        snprintf(msg, sizeof msg, "card cannot be doubled (%s)", c);
        break;
    }
    case TRIX_E_ALREADY_ANSWERED: snprintf(msg, sizeof msg, "seat already answered"); break;
    case TRIX_E_GAME_OVER: snprintf(msg, sizeof msg, "game is over"); break;
    case TRIX_E_BAD_ACTION: snprintf(msg, sizeof msg, "bad action (%d)", action); break;
    case TRIX_E_BAD_SEAT: snprintf(msg, sizeof msg, "bad seat (%d)", seat); break;
    default:
        PyErr_Format(PyExc_RuntimeError, "trix engine error %d", (int)st);
        return NULL;
    }
    return raise_illegal(code, msg);
}

/* ---- events -> tuples ------------------------------------------------------------ */

static PyObject *int4(const int32_t v[4]) {
    return Py_BuildValue("(iiii)", (int)v[0], (int)v[1], (int)v[2], (int)v[3]);
}

static PyObject *event_to_py(const trix_event *e) {
    switch (e->kind) {
    case TRIX_EV_DEAL_STARTED: return Py_BuildValue("(iiii)", 0, e->a, e->b, e->seat);
    case TRIX_EV_CONTRACT_CHOSEN: return Py_BuildValue("(iii)", 1, e->seat, e->a);
    case TRIX_EV_DOUBLE_ANSWERED:
        return Py_BuildValue("(iiO)", 2, e->seat, mask_cards_cache[e->a & TRIX_DBL_ALL]);
    case TRIX_EV_DOUBLES_REVEALED:
        return Py_BuildValue("(i((iO)(iO)(iO)(iO)))", 3, 0, mask_cards_cache[e->r[0] & 31], 1,
                             mask_cards_cache[e->r[1] & 31], 2, mask_cards_cache[e->r[2] & 31], 3,
                             mask_cards_cache[e->r[3] & 31]);
    case TRIX_EV_CARD_PLAYED: {
        PyObject *t = card_played_cache[e->seat & 3][e->a % TRIX_CARDS];
        Py_INCREF(t);
        return t;
    }
    case TRIX_EV_TRICK_TAKEN: {
        PyObject *p = int4(e->v);
        if (!p) return NULL;
        return Py_BuildValue("(iiiN)", 5, e->seat, e->a, p);
    }
    case TRIX_EV_SEAT_PASSED: {
        PyObject *t = seat_passed_cache[e->seat & 3];
        Py_INCREF(t);
        return t;
    }
    case TRIX_EV_SEAT_OUT: return Py_BuildValue("(iiii)", 7, e->seat, e->a, (int)e->v[0]);
    case TRIX_EV_DEAL_SCORED: {
        PyObject *p = int4(e->v);
        if (!p) return NULL;
        return Py_BuildValue("(iiN)", 8, e->a, p);
    }
    case TRIX_EV_GAME_ENDED: {
        PyObject *p = int4(e->v);
        if (!p) return NULL;
        return Py_BuildValue("(iN(iiii))", 9, p, e->r[0], e->r[1], e->r[2], e->r[3]);
    }
    case TRIX_EV_SEAT_LEFT: return Py_BuildValue("(ii)", 10, e->seat);
    default: PyErr_SetString(PyExc_RuntimeError, "unknown event"); return NULL;
    }
}

static PyObject *events_to_list(const trix_event *ev, int n) {
    PyObject *list = PyList_New(n);
    if (!list) return NULL;
    for (int i = 0; i < n; i++) {
        PyObject *t = event_to_py(&ev[i]);
        if (!t) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, t);
    }
    return list;
}

/* ---- argument helpers ------------------------------------------------------------- */

/* A Python int as a C int; values far out of range become `oob` (rejected later). */
static int as_small_int(PyObject *o, int oob, int *out) {
    int overflow = 0;
    long v = PyLong_AsLongAndOverflow(o, &overflow);
    if (v == -1 && PyErr_Occurred()) return -1;
    if (overflow || v < -1000000 || v > 1000000) v = oob;
    *out = (int)v;
    return 0;
}

static int parse_options(PyObject *o, trix_options *opt) {
    *opt = trix_default_options();
    if (o == NULL || o == Py_None) return 0;
    static const char *const names[5] = {"doubling", "doubling_reveal", "doubling_self_take",
                                         "team_tiebreak", "partnership_trix_early_end"};
    uint8_t *fields[5] = {&opt->doubling, &opt->doubling_reveal, &opt->doubling_self_take,
                          &opt->team_tiebreak, &opt->partnership_trix_early_end};
    int is_tuple = PyTuple_Check(o);
    if (is_tuple && PyTuple_GET_SIZE(o) != 5) {
        PyErr_SetString(PyExc_ValueError, "options tuple must have 5 fields");
        return -1;
    }
    for (int i = 0; i < 5; i++) {
        PyObject *v = is_tuple ? (Py_INCREF(PyTuple_GET_ITEM(o, i)), PyTuple_GET_ITEM(o, i))
                               : PyObject_GetAttrString(o, names[i]);
        if (!v) return -1;
        long x = PyLong_AsLong(v);
        Py_DECREF(v);
        if (x == -1 && PyErr_Occurred()) return -1;
        if (x < 0 || x > 1) {
            PyErr_Format(PyExc_ValueError, "option %s out of range", names[i]);
            return -1;
        }
        *fields[i] = (uint8_t)x;
    }
    return 0;
}

/* 4 hands of 13 card ids -> masks; ValueError on anything else. */
static int parse_hands(PyObject *hands, uint64_t m[TRIX_SEATS]) {
    PyObject *seq = PySequence_Fast(hands, "hands must be a sequence of 4 hands");
    if (!seq) return -1;
    if (PySequence_Fast_GET_SIZE(seq) != TRIX_SEATS) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "a deal has 4 hands");
        return -1;
    }
    for (int s = 0; s < TRIX_SEATS; s++) {
        m[s] = 0;
        PyObject *h = PySequence_Fast(PySequence_Fast_GET_ITEM(seq, s), "a hand must be a sequence");
        if (!h) {
            Py_DECREF(seq);
            return -1;
        }
        Py_ssize_t n = PySequence_Fast_GET_SIZE(h);
        int bad = n != TRIX_HAND_SIZE;
        for (Py_ssize_t i = 0; i < n && !bad; i++) {
            PyObject *it = PySequence_Fast_GET_ITEM(h, i);
            if (!PyLong_Check(it)) {
                bad = 1;
                break;
            }
            int c;
            if (as_small_int(it, -1, &c) < 0) {
                Py_DECREF(h);
                Py_DECREF(seq);
                return -1;
            }
            if (c < 0 || c >= TRIX_CARDS || (m[s] & TRIX_BIT(c))) bad = 1;
            else m[s] |= TRIX_BIT(c);
        }
        Py_DECREF(h);
        if (bad) {
            Py_DECREF(seq);
            PyErr_SetString(PyExc_ValueError,
                            "hands must be 4 x 13 distinct card ids partitioning 0..51");
            return -1;
        }
    }
    Py_DECREF(seq);
    return 0;
}

static int parse_policies(PyObject *o, uint8_t pol[TRIX_SEATS]) {
    if (o == NULL || o == Py_None) {
        for (int s = 0; s < TRIX_SEATS; s++) pol[s] = TRIX_POLICY_BOT;
        return 0;
    }
    PyObject *seq = PySequence_Fast(o, "policies must be a sequence of 4 ints");
    if (!seq) return -1;
    if (PySequence_Fast_GET_SIZE(seq) != TRIX_SEATS) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "policies must have 4 entries");
        return -1;
    }
    for (int s = 0; s < TRIX_SEATS; s++) {
        long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, s));
        if (v == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return -1;
        }
        if (v < TRIX_POLICY_RANDOM || v > TRIX_POLICY_BOT) {
            Py_DECREF(seq);
            PyErr_SetString(PyExc_ValueError, "policy must be RANDOM, LOWEST or BOT");
            return -1;
        }
        pol[s] = (uint8_t)v;
    }
    Py_DECREF(seq);
    return 0;
}

static int check_seat(PyObject *o, int *seat) {
    if (as_small_int(o, -1, seat) < 0) return -1;
    if (*seat < 0 || *seat >= TRIX_SEATS) {
        char msg[48];
        snprintf(msg, sizeof msg, "bad seat (%d)", *seat);
        raise_illegal(TRIX_E_BAD_SEAT, msg);
        return -1;
    }
    return 0;
}

/* ---- Game type ------------------------------------------------------------------ */

static PyTypeObject GameType;

static PyObject *Game_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    (void)args;
    (void)kw;
    GameObject *self = (GameObject *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    trix_init(&self->g, TRIX_VARIANT_TRIX, NULL);
    self->bot_rng = UINT64_C(0x7269785f626f74); /* fixed: bot_action is reproducible */
    return (PyObject *)self;
}

static int Game_init(GameObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"variant", "options", "decks", NULL};
    PyObject *variant_o, *options = NULL, *decks = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OO", kwlist, &variant_o, &options, &decks))
        return -1;
    long variant = PyLong_AsLong(variant_o);
    if (variant == -1 && PyErr_Occurred()) return -1;
    trix_options opt;
    if (parse_options(options, &opt) < 0) return -1;
    if (trix_init(&self->g, (int)variant, &opt) != TRIX_OK) {
        PyErr_Format(PyExc_ValueError, "unknown variant %ld", variant);
        return -1;
    }
    if (decks && decks != Py_None) {
        PyObject *seq = PySequence_Fast(decks, "decks must be a sequence of deals");
        if (!seq) return -1;
        Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
        if (n > self->g.num_deals) {
            Py_DECREF(seq);
            PyErr_Format(PyExc_ValueError, "at most %d decks", (int)self->g.num_deals);
            return -1;
        }
        for (Py_ssize_t d = 0; d < n; d++) {
            uint64_t m[TRIX_SEATS];
            trix_event ev[TRIX_MAX_EVENTS];
            int nev;
            if (parse_hands(PySequence_Fast_GET_ITEM(seq, d), m) < 0) {
                Py_DECREF(seq);
                return -1;
            }
            if (trix_provide_deal_masks(&self->g, m, ev, TRIX_MAX_EVENTS, &nev) != TRIX_OK) {
                Py_DECREF(seq);
                PyErr_Format(PyExc_ValueError, "deck %d is not a partition of 0..51", (int)d);
                return -1;
            }
        }
        Py_DECREF(seq);
    }
    return 0;
}

static PyObject *Game_to_act(GameObject *self, PyObject *Py_UNUSED(ignored)) {
    uint8_t seats[TRIX_SEATS];
    int n = trix_to_act(&self->g, seats);
    if (n == 0) {
        Py_INCREF(empty_tuple);
        return empty_tuple;
    }
    if (n == 1) {
        PyObject *t = seat_tuple_cache[seats[0] & 3];
        Py_INCREF(t);
        return t;
    }
    PyObject *t = PyTuple_New(n);
    if (!t) return NULL;
    for (int i = 0; i < n; i++) PyTuple_SET_ITEM(t, i, PyLong_FromLong(seats[i]));
    return t;
}

static PyObject *Game_legal_actions(GameObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 1) {
        PyErr_SetString(PyExc_TypeError, "legal_actions(seat)");
        return NULL;
    }
    int seat;
    if (check_seat(args[0], &seat) < 0) return NULL;
    uint8_t acts[TRIX_MAX_ACTIONS];
    int n = trix_legal_actions(&self->g, seat, acts);
    PyObject *list = PyList_New(n);
    if (!list) return NULL;
    for (int i = 0; i < n; i++) PyList_SET_ITEM(list, i, PyLong_FromLong(acts[i]));
    return list;
}

static PyObject *Game_apply(GameObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "apply(seat, action)");
        return NULL;
    }
    int seat, action;
    if (as_small_int(args[0], -1, &seat) < 0) return NULL;
    if (as_small_int(args[1], -1, &action) < 0) return NULL;
    trix_event ev[TRIX_MAX_EVENTS];
    int n = 0;
    trix_status st = trix_apply(&self->g, seat, action, ev, TRIX_MAX_EVENTS, &n);
    if (st != TRIX_OK) return raise_status(&self->g, st, seat, action);
    if (n == 1 && ev[0].kind == TRIX_EV_CARD_PLAYED) {
        PyObject *list = PyList_New(1);
        if (!list) return NULL;
        PyObject *t = card_played_cache[ev[0].seat & 3][ev[0].a % TRIX_CARDS];
        Py_INCREF(t);
        PyList_SET_ITEM(list, 0, t);
        return list;
    }
    return events_to_list(ev, n);
}

static PyObject *Game_provide_deal(GameObject *self, PyObject *hands) {
    uint64_t m[TRIX_SEATS];
    if (parse_hands(hands, m) < 0) return NULL;
    trix_event ev[TRIX_MAX_EVENTS];
    int n = 0;
    trix_status st = trix_provide_deal_masks(&self->g, m, ev, TRIX_MAX_EVENTS, &n);
    if (st == TRIX_E_GAME_OVER) return raise_illegal(TRIX_E_GAME_OVER, "game is over");
    if (st == TRIX_E_BAD_DECK) {
        PyErr_SetString(PyExc_ValueError, "hands must be 4 x 13 distinct card ids partitioning 0..51");
        return NULL;
    }
    if (st != TRIX_OK) {
        PyErr_SetString(PyExc_ValueError, "every deal of this game already has its deck");
        return NULL;
    }
    return events_to_list(ev, n);
}

static PyObject *Game_leave(GameObject *self, PyObject *arg) {
    int seat;
    if (check_seat(arg, &seat) < 0) return NULL;
    trix_event ev[TRIX_MAX_EVENTS];
    int n = 0;
    trix_status st = trix_leave(&self->g, seat, ev, TRIX_MAX_EVENTS, &n);
    if (st != TRIX_OK) return raise_status(&self->g, st, seat, 0);
    return events_to_list(ev, n);
}

static PyObject *mask_to_tuple(uint64_t m) {
    PyObject *t = PyTuple_New(__builtin_popcountll(m));
    if (!t) return NULL;
    Py_ssize_t i = 0;
    while (m) {
        PyTuple_SET_ITEM(t, i++, PyLong_FromLong(__builtin_ctzll(m)));
        m &= m - 1;
    }
    return t;
}

static PyObject *Game_hand(GameObject *self, PyObject *arg) {
    int seat;
    if (check_seat(arg, &seat) < 0) return NULL;
    return mask_to_tuple(self->g.hand[seat]);
}

static PyObject *Game_scores(GameObject *self, PyObject *Py_UNUSED(ignored)) {
    return int4(self->g.scores);
}

static PyObject *Game_totals(GameObject *self, PyObject *Py_UNUSED(ignored)) {
    return int4(self->g.totals);
}

static PyObject *Game_ranking(GameObject *self, PyObject *Py_UNUSED(ignored)) {
    if (self->g.phase != TRIX_PHASE_GAME_OVER) Py_RETURN_NONE;
    const uint8_t *r = self->g.ranking;
    return Py_BuildValue("(iiii)", r[0], r[1], r[2], r[3]);
}

static PyObject *Game_snapshot(GameObject *self, PyObject *Py_UNUSED(ignored)) {
    uint8_t buf[TRIX_SNAPSHOT_MAX];
    size_t n = 0;
    if (trix_snapshot(&self->g, buf, sizeof buf, &n) != TRIX_OK) {
        PyErr_SetString(PyExc_RuntimeError, "snapshot failed");
        return NULL;
    }
    return PyBytes_FromStringAndSize((const char *)buf, (Py_ssize_t)n);
}

static GameObject *alloc_like(PyTypeObject *type) {
    GameObject *o = (GameObject *)type->tp_alloc(type, 0);
    if (!o) return NULL;
    o->bot_rng = UINT64_C(0x7269785f626f74);
    return o;
}

static PyObject *Game_restore(PyObject *cls, PyObject *data) {
    Py_buffer view;
    if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject *)cls, &GameType)) {
        PyErr_SetString(PyExc_TypeError, "restore is a Game class method");
        return NULL;
    }
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0) return NULL;
    GameObject *o = alloc_like((PyTypeObject *)cls);
    if (!o) {
        PyBuffer_Release(&view);
        return NULL;
    }
    trix_status st = trix_restore(&o->g, (const uint8_t *)view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    if (st != TRIX_OK) {
        Py_DECREF(o);
        PyErr_SetString(PyExc_ValueError, "corrupt or unsupported game snapshot");
        return NULL;
    }
    return (PyObject *)o;
}

static PyObject *Game_clone(GameObject *self, PyObject *Py_UNUSED(ignored)) {
    GameObject *o = alloc_like(Py_TYPE(self));
    if (!o) return NULL;
    memcpy(&o->g, &self->g, sizeof o->g);
    o->bot_rng = self->bot_rng;
    return (PyObject *)o;
}

static PyObject *Game_bot_action(GameObject *self, PyObject *arg) {
    int seat;
    if (check_seat(arg, &seat) < 0) return NULL;
    int a = trix_bot_action(&self->g, seat, &self->bot_rng);
    if (a < 0 || trix_check(&self->g, seat, a) != TRIX_OK) {
        uint8_t acts[TRIX_MAX_ACTIONS];
        if (trix_legal_actions(&self->g, seat, acts) == 0)
            return raise_illegal(TRIX_E_NOT_YOUR_TURN, "seat has nothing to do");
        PyErr_SetString(PyExc_RuntimeError, "bot returned an illegal action");
        return NULL;
    }
    return PyLong_FromLong(a);
}

static PyObject *Game_options_tuple(GameObject *self, PyObject *Py_UNUSED(ignored)) {
    const trix_options *o = &self->g.opt;
    return Py_BuildValue("(iiiii)", o->doubling, o->doubling_reveal, o->doubling_self_take,
                         o->team_tiebreak, o->partnership_trix_early_end);
}

static PyObject *u8tuple(const uint8_t *v, int n) {
    PyObject *t = PyTuple_New(n);
    if (!t) return NULL;
    for (int i = 0; i < n; i++) PyTuple_SET_ITEM(t, i, PyLong_FromLong(v[i]));
    return t;
}

/* Raw state for the Python-side view()/record(): see engine/python/__init__.py. */
static PyObject *Game_state(GameObject *self, PyObject *Py_UNUSED(ignored)) {
    const trix_game *g = &self->g;
    PyObject *d = PyDict_New();
    if (!d) return NULL;
#define SET(key, expr)                                  \
    do {                                                \
        PyObject *v_ = (expr);                          \
        if (!v_ || PyDict_SetItemString(d, key, v_) < 0) { \
            Py_XDECREF(v_);                             \
            Py_DECREF(d);                               \
            return NULL;                                \
        }                                               \
        Py_DECREF(v_);                                  \
    } while (0)
    SET("phase", PyLong_FromLong(g->phase));
    SET("turn", PyLong_FromLong(g->turn));
    SET("hand_counts", Py_BuildValue("(iiii)", __builtin_popcountll(g->hand[0]),
                                     __builtin_popcountll(g->hand[1]), __builtin_popcountll(g->hand[2]),
                                     __builtin_popcountll(g->hand[3])));
    SET("answered", PyLong_FromLong(g->answered));
    SET("answer_mask", u8tuple(g->answer_mask, 4));
    SET("trick_leader", PyLong_FromLong(g->trick_leader));
    SET("trick_cards", u8tuple(g->trick_cards, g->trick_len));
    SET("tricks_taken", u8tuple(g->tricks_taken, 4));
    SET("row_low", u8tuple(g->row_low, 4));
    SET("row_high", u8tuple(g->row_high, 4));
    SET("out", u8tuple(g->out, g->n_out));
    SET("played_contracts", PyLong_FromLong(g->played_contracts));
    SET("left", PyLong_FromLong(g->left));
    SET("n_deals_started", PyLong_FromLong(g->n_deals_started));
#undef SET
    return d;
}

/* Per-deal history (docs/rules.md §12): list of (owner, contract|None,
 * ((seat, mask), ...), (card, ...), scores|None, hands as 4 sorted tuples). */
static PyObject *Game_history(GameObject *self, PyObject *Py_UNUSED(ignored)) {
    const trix_game *g = &self->g;
    PyObject *list = PyList_New(0);
    if (!list) return NULL;
    for (int d = 0; d < g->n_deals_started && d < TRIX_MAX_DEALS; d++) {
        const trix_deal_record *h = &g->hist[d];
        PyObject *answers = PyTuple_New(h->n_answers);
        if (!answers) goto fail;
        for (int i = 0; i < h->n_answers; i++)
            PyTuple_SET_ITEM(answers, i, Py_BuildValue("(ii)", h->answer_seat[i], h->answer_mask[i]));
        PyObject *plays = u8tuple(h->plays, h->n_plays);
        PyObject *scores = h->scored ? int4(h->scores) : (Py_INCREF(Py_None), Py_None);
        PyObject *hands = Py_BuildValue("(NNNN)", mask_to_tuple(g->deck[d][0]), mask_to_tuple(g->deck[d][1]),
                                        mask_to_tuple(g->deck[d][2]), mask_to_tuple(g->deck[d][3]));
        PyObject *contract = h->contract == TRIX_NO_CONTRACT ? (Py_INCREF(Py_None), Py_None)
                                                             : PyLong_FromLong(h->contract);
        PyObject *item = (plays && scores && hands && contract)
                             ? Py_BuildValue("(iNNNNN)", h->owner, contract, answers, plays, scores, hands)
                             : NULL;
        if (!item) {
            Py_XDECREF(plays);
            Py_XDECREF(scores);
            Py_XDECREF(hands);
            Py_XDECREF(contract);
            Py_DECREF(answers);
            goto fail;
        }
        if (PyList_Append(list, item) < 0) {
            Py_DECREF(item);
            goto fail;
        }
        Py_DECREF(item);
    }
    return list;
fail:
    Py_DECREF(list);
    return NULL;
}

static PyObject *Game_get_int(GameObject *self, void *which) {
    const trix_game *g = &self->g;
    switch ((intptr_t)which) {
    case 0: return PyLong_FromLong(g->variant);
    case 1: return PyLong_FromLong(g->phase);
    case 2: return PyLong_FromLong(g->deal_index);
    case 3: return PyLong_FromLong(g->kingdom);
    case 4:
        if (g->owner == TRIX_NO_SEAT) Py_RETURN_NONE;
        return PyLong_FromLong(g->owner);
    case 5:
        if (g->contract == TRIX_NO_CONTRACT) Py_RETURN_NONE;
        return PyLong_FromLong(g->contract);
    case 6: return PyLong_FromLong(g->num_deals);
    default: Py_RETURN_NONE;
    }
}

static PyGetSetDef Game_getset[] = {
    {"_variant", (getter)Game_get_int, NULL, "variant as int", (void *)0},
    {"_phase", (getter)Game_get_int, NULL, "phase as int", (void *)1},
    {"deal_index", (getter)Game_get_int, NULL, "0-based deal index", (void *)2},
    {"kingdom", (getter)Game_get_int, NULL, "0-based kingdom", (void *)3},
    {"owner", (getter)Game_get_int, NULL, "owner of the current kingdom or None", (void *)4},
    {"_contract", (getter)Game_get_int, NULL, "contract as int or None", (void *)5},
    {"num_deals", (getter)Game_get_int, NULL, "20 or 8", (void *)6},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef Game_methods[] = {
    {"to_act", (PyCFunction)Game_to_act, METH_NOARGS, "seats that may act now"},
    {"legal_actions", (PyCFunction)(void (*)(void))Game_legal_actions, METH_FASTCALL,
     "sorted legal actions of a seat"},
    {"apply", (PyCFunction)(void (*)(void))Game_apply, METH_FASTCALL, "apply an action, return events"},
    {"provide_deal", (PyCFunction)Game_provide_deal, METH_O, "supply the next deal's 4 hands"},
    {"leave", (PyCFunction)Game_leave, METH_O, "docs/rules.md §10: a seat leaves a paid table"},
    {"hand", (PyCFunction)Game_hand, METH_O, "a seat's hand, sorted ids"},
    {"scores", (PyCFunction)Game_scores, METH_NOARGS, "the current deal's points so far"},
    {"totals", (PyCFunction)Game_totals, METH_NOARGS, "totals of finished deals"},
    {"ranking", (PyCFunction)Game_ranking, METH_NOARGS, "places, or None until GAME_OVER"},
    {"snapshot", (PyCFunction)Game_snapshot, METH_NOARGS, "versioned bytes"},
    {"restore", (PyCFunction)Game_restore, METH_O | METH_CLASS, "Game from snapshot bytes"},
    {"clone", (PyCFunction)Game_clone, METH_NOARGS, "an independent copy"},
    {"bot_action", (PyCFunction)Game_bot_action, METH_O, "the C bot's choice for a seat"},
    {"_options_tuple", (PyCFunction)Game_options_tuple, METH_NOARGS, "options as 5 ints"},
    {"_state", (PyCFunction)Game_state, METH_NOARGS, "raw state for view()"},
    {"_history", (PyCFunction)Game_history, METH_NOARGS, "per-deal history for record()"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject GameType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "trix.engine._core.Game",
    .tp_basicsize = sizeof(GameObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "A Trix game (docs/rules.md); see docs/engine-api.md.",
    .tp_new = Game_new,
    .tp_init = (initproc)Game_init,
    .tp_methods = Game_methods,
    .tp_getset = Game_getset,
};

/* ---- module functions --------------------------------------------------------------- */

static PyObject *playout_result(trix_game *g, uint32_t moves) {
    const uint8_t *r = g->ranking;
    PyObject *t = int4(g->totals);
    if (!t) return NULL;
    return Py_BuildValue("(N(iiii)I)", t, r[0], r[1], r[2], r[3], (unsigned)moves);
}

static PyObject *run_playout(trix_game *g, PyObject *seed_o, PyObject *pol_o) {
    uint8_t pol[TRIX_SEATS];
    if (parse_policies(pol_o, pol) < 0) return NULL;
    unsigned long long seed = PyLong_AsUnsignedLongLongMask(seed_o);
    if (seed == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
    uint32_t moves = 0;
    trix_status st;
    Py_BEGIN_ALLOW_THREADS
    st = trix_playout(g, pol, (uint64_t)seed, &moves);
    Py_END_ALLOW_THREADS
    if (st != TRIX_OK) {
        PyErr_Format(PyExc_RuntimeError, "playout failed (status %d)", (int)st);
        return NULL;
    }
    return playout_result(g, moves);
}

static PyObject *mod_playout(PyObject *m, PyObject *args, PyObject *kw) {
    (void)m;
    static char *kwlist[] = {"variant", "options", "seed", "policies", NULL};
    PyObject *variant_o, *options, *seed_o, *pol_o = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO|O", kwlist, &variant_o, &options, &seed_o, &pol_o))
        return NULL;
    long variant = PyLong_AsLong(variant_o);
    if (variant == -1 && PyErr_Occurred()) return NULL;
    trix_options opt;
    if (parse_options(options, &opt) < 0) return NULL;
    trix_game g;
    if (trix_init(&g, (int)variant, &opt) != TRIX_OK) {
        PyErr_Format(PyExc_ValueError, "unknown variant %ld", variant);
        return NULL;
    }
    return run_playout(&g, seed_o, pol_o);
}

static PyObject *mod_playout_from(PyObject *m, PyObject *args, PyObject *kw) {
    (void)m;
    static char *kwlist[] = {"game", "seed", "policies", NULL};
    PyObject *game, *seed_o, *pol_o = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!O|O", kwlist, &GameType, &game, &seed_o, &pol_o))
        return NULL;
    trix_game g;
    memcpy(&g, &((GameObject *)game)->g, sizeof g);
    return run_playout(&g, seed_o, pol_o);
}

static PyObject *mod_register(PyObject *m, PyObject *cls) {
    (void)m;
    Py_XSETREF(IllegalActionType, Py_NewRef(cls));
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"playout", (PyCFunction)(void (*)(void))mod_playout, METH_VARARGS | METH_KEYWORDS,
     "playout(variant, options, seed, policies) -> (totals, ranking, moves)"},
    {"playout_from", (PyCFunction)(void (*)(void))mod_playout_from, METH_VARARGS | METH_KEYWORDS,
     "playout_from(game, seed, policies) -> (totals, ranking, moves)"},
    {"_register", (PyCFunction)mod_register, METH_O, "register the IllegalAction class"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT, "trix.engine._core", "C rules engine binding (docs/engine-api.md)", -1,
    module_methods, NULL, NULL, NULL, NULL,
};

static int build_caches(void) {
    empty_tuple = PyTuple_New(0);
    if (!empty_tuple) return -1;
    for (int s = 0; s < TRIX_SEATS; s++) {
        seat_tuple_cache[s] = Py_BuildValue("(i)", s);
        seat_passed_cache[s] = Py_BuildValue("(ii)", TRIX_EV_SEAT_PASSED, s);
        if (!seat_tuple_cache[s] || !seat_passed_cache[s]) return -1;
        for (int c = 0; c < TRIX_CARDS; c++) {
            card_played_cache[s][c] = Py_BuildValue("(iii)", TRIX_EV_CARD_PLAYED, s, c);
            if (!card_played_cache[s][c]) return -1;
        }
    }
    for (int m = 0; m <= TRIX_DBL_ALL; m++) {
        uint64_t cards = 0;
        for (int b = 0; b < 5; b++)
            if (m & (1 << b)) cards |= TRIX_BIT(trix_double_bit_card(b));
        mask_cards_cache[m] = mask_to_tuple(cards);
        if (!mask_cards_cache[m]) return -1;
    }
    return 0;
}

PyMODINIT_FUNC PyInit__core(void) {
    if (PyType_Ready(&GameType) < 0) return NULL;
    if (!empty_tuple && build_caches() < 0) return NULL;
    PyObject *m = PyModule_Create(&core_module);
    if (!m) return NULL;
    Py_INCREF(&GameType);
    if (PyModule_AddObject(m, "Game", (PyObject *)&GameType) < 0) {
        Py_DECREF(&GameType);
        Py_DECREF(m);
        return NULL;
    }
    if (PyModule_AddIntConstant(m, "SNAPSHOT_MAX", TRIX_SNAPSHOT_MAX) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
