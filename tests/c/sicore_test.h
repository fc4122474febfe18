/* What sicore_test.c and sicore_test_rm.c share: checks, the recording RM, messages. */
#ifndef SICORE_TEST_H
#define SICORE_TEST_H

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sicore.h"
#include "si.pb-c.h"
#include "sicore.pb-c.h"

#define WAIT_SECONDS 10
#define MAX_ALLOCS 64
#define MAX_KEYS 128
#define STR 128

/* Defined in header_cxx.cpp (C++17): returns the number of failed checks. */
int sicore_header_cxx_check(void);

extern int g_passed, g_failed;
void check_(bool ok, const char *file, int line, const char *fmt, ...);
#define CHECK(cond, ...) check_((cond), __FILE__, __LINE__, __VA_ARGS__)

typedef struct {
    char uuid[STR], key[STR], node[STR], app[STR], queue[STR], partition[STR];
    int assumed_seen; /* resync assumed count when this allocation arrived */
    bool released;
    int termination_type;
} alloc_rec;

typedef struct recorder {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    const char *name;
    sicore_scheduler *sched; /* for the in-callback re-entrancy checks */

    int nodes_accepted, nodes_rejected;
    int apps_accepted, apps_rejected, apps_updated;
    char accepted_app[STR];
    alloc_rec allocs[MAX_ALLOCS];
    int n_allocs;
    int released_unknown; /* released UUIDs we never saw allocated */
    int released_asks, rejected_asks;
    char assumed_key[MAX_KEYS][STR], assumed_node[MAX_KEYS][STR];
    int n_assumed;
    char forgot_key[MAX_KEYS][STR];
    int n_forgot;
    int predicates_calls, predicates_bad_args;
    int events, event_batches;
    int sched_state_calls, config_calls;
    int decode_failures;
    int callbacks_total;
    int release_calls;
    bool freed;       /* set by main after sicore_free returned */
    int late_calls;   /* callbacks seen after that */

    /* re-entrancy probes, run once from inside update_node */
    bool probed;
    sicore_status probe_dump, probe_register, probe_update;
} recorder;

typedef bool (*pred_fn)(recorder *r, const void *arg);

typedef struct {
    uint8_t *data;
    size_t len;
} packed;

/* A Resource {memory, vcore}; storage supplied by the caller. */
typedef struct {
    Si__V1__Quantity q[2];
    Si__V1__Resource__ResourcesEntry e[2];
    Si__V1__Resource__ResourcesEntry *ep[2];
    Si__V1__Resource res;
} resource_buf;

const char *status_name(sicore_status s);
const char *enumerator_name(sicore_status s);
void expect_ok(sicore_status st, sicore_buffer *err, const char *what);
void expect_fail(sicore_status st, sicore_status want, sicore_buffer *err, const char *what);
recorder *recorder_new(const char *name);
void recorder_free(recorder *r);
void copy_str(char *dst, const char *src);
sicore_callbacks callbacks_for(recorder *r);
bool wait_for(recorder *r, pred_fn pred, const void *arg, const char *what);
bool p_nodes(recorder *r, const void *arg);
bool p_apps(recorder *r, const void *arg);
bool p_allocs(recorder *r, const void *arg);
bool p_forgot(recorder *r, const void *arg);
bool p_release(recorder *r, const void *arg);
bool p_released_uuid(recorder *r, const void *arg);
bool p_all_released(recorder *r, const void *arg);
packed pack_msg(const ProtobufCMessage *m);
Si__V1__Resource *make_resource(resource_buf *b, int64_t memory, int64_t vcore);
sicore_status send_ask(sicore_scheduler *s, const char *rm, const char *key, int max, sicore_buffer *err);
void still_allocates(sicore_scheduler *s, recorder *r, const char *after);

#endif
