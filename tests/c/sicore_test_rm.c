/* The C test's helpers: checks, the recording RM's callbacks, waiting, messages. */
#include "sicore_test.h"

/* ------------------------------------------------------------------ */
/* Checks                                                              */
/* ------------------------------------------------------------------ */

int g_passed, g_failed;

void check_(bool ok, const char *file, int line, const char *fmt, ...) {
    if (ok) {
        g_passed++;
        return;
    }
    g_failed++;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "FAIL %s:%d: ", file, line);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* The library's names (sicore_status_str); check_status_names compares
 * them with the enumerators spelled out here. */
const char *status_name(sicore_status s) { return sicore_status_str((int)s); }

const char *enumerator_name(sicore_status s) {
    switch (s) {
    case SICORE_OK: return "SICORE_OK";
    case SICORE_INVALID_ARGUMENT: return "SICORE_INVALID_ARGUMENT";
    case SICORE_DECODE_ERROR: return "SICORE_DECODE_ERROR";
    case SICORE_REJECTED: return "SICORE_REJECTED";
    case SICORE_STOPPED: return "SICORE_STOPPED";
    case SICORE_WOULD_DEADLOCK: return "SICORE_WOULD_DEADLOCK";
    case SICORE_INTERNAL: return "SICORE_INTERNAL";
    }
    return "unknown status";
}

/* A call that must succeed: status OK and error_out left empty. */
void expect_ok(sicore_status st, sicore_buffer *err, const char *what) {
    CHECK(st == SICORE_OK, "%s: got %s: %.*s", what, status_name(st), (int)err->len,
          err->data ? (const char *)err->data : "");
    CHECK(err->data == NULL && err->len == 0, "%s: error_out not left empty on success", what);
    sicore_buffer_free(*err);
    err->data = NULL;
    err->len = 0;
}

/* A call that must fail with `want` and a non-empty message. */
void expect_fail(sicore_status st, sicore_status want, sicore_buffer *err, const char *what) {
    CHECK(st == want, "%s: want %s, got %s", what, status_name(want), status_name(st));
    CHECK(err->data != NULL && err->len > 0, "%s: no error message", what);
    if (err->data != NULL && err->len > 0)
        printf("  %s -> %s: %.*s\n", what, status_name(st), (int)err->len, (const char *)err->data);
    sicore_buffer_free(*err);
    err->data = NULL;
    err->len = 0;
}


/* ------------------------------------------------------------------ */
/* Recording callbacks                                                 */
/* ------------------------------------------------------------------ */

recorder *recorder_new(const char *name) {
    recorder *r = calloc(1, sizeof *r);
    if (!r) {
        perror("calloc");
        exit(2);
    }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, &ca);
    pthread_condattr_destroy(&ca);
    r->name = name;
    return r;
}

void recorder_free(recorder *r) {
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

void copy_str(char *dst, const char *src) {
    snprintf(dst, STR, "%s", src ? src : "");
}

/* Common prologue of every callback: count, flag late calls. */
static void enter(recorder *r) {
    r->callbacks_total++;
    if (r->freed) r->late_calls++;
}

static void leave(recorder *r) {
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

static int32_t cb_update_allocation(void *ud, const uint8_t *msg, size_t len, sicore_reply *error) {
    (void)error;
    recorder *r = ud;
    Si__V1__AllocationResponse *m = si__v1__allocation_response__unpack(NULL, len, msg);
    pthread_mutex_lock(&r->mu);
    enter(r);
    if (!m) {
        r->decode_failures++;
        leave(r);
        return 0;
    }
    for (size_t i = 0; i < m->n_new_; i++) {
        const Si__V1__Allocation *a = m->new_[i];
        if (r->n_allocs >= MAX_ALLOCS) break;
        alloc_rec *ar = &r->allocs[r->n_allocs++];
        copy_str(ar->uuid, a->uuid);
        copy_str(ar->key, a->allocationkey);
        copy_str(ar->node, a->nodeid);
        copy_str(ar->app, a->applicationid);
        copy_str(ar->queue, a->queuename);
        copy_str(ar->partition, a->partitionname);
        ar->assumed_seen = r->n_assumed;
    }
    for (size_t i = 0; i < m->n_released; i++) {
        const Si__V1__AllocationRelease *rel = m->released[i];
        bool found = false;
        for (int j = 0; j < r->n_allocs; j++) {
            if (strcmp(r->allocs[j].uuid, rel->uuid) == 0) {
                r->allocs[j].released = true;
                r->allocs[j].termination_type = (int)rel->terminationtype;
                found = true;
            }
        }
        if (!found) r->released_unknown++;
    }
    r->released_asks += (int)m->n_releasedasks;
    r->rejected_asks += (int)m->n_rejected;
    for (size_t i = 0; i < m->n_rejected; i++)
        fprintf(stderr, "  [%s] rejected ask %s: %s\n", r->name, m->rejected[i]->allocationkey,
                m->rejected[i]->reason);
    leave(r);
    si__v1__allocation_response__free_unpacked(m, NULL);
    return 0;
}

static void probe_reentrancy(recorder *r) {
    /* Synchronous calls from a callback must refuse instead of hanging;
     * asynchronous ones are allowed. Runs without our mutex held. */
    sicore_buffer json = {NULL, 0}, err = {NULL, 0}, resp = {NULL, 0};
    r->probe_dump = sicore_state_dump(r->sched, &json, &err);
    sicore_buffer_free(json);
    sicore_buffer_free(err);
    err = (sicore_buffer){NULL, 0};

    Si__V1__RegisterResourceManagerRequest reg = SI__V1__REGISTER_RESOURCE_MANAGER_REQUEST__INIT;
    reg.rmid = "c-rm";
    reg.policygroup = "queues";
    uint8_t buf[256];
    size_t n = si__v1__register_resource_manager_request__pack(&reg, buf);
    sicore_callbacks none = {.struct_size = sizeof none};
    r->probe_register = sicore_register_resource_manager(r->sched, buf, n, &none, &resp, &err);
    sicore_buffer_free(resp);
    sicore_buffer_free(err);
    err = (sicore_buffer){NULL, 0};

    /* An empty NodeRequest for our RM: queued, nothing to do. */
    Si__V1__NodeRequest nr = SI__V1__NODE_REQUEST__INIT;
    nr.rmid = "c-rm";
    n = si__v1__node_request__pack(&nr, buf);
    r->probe_update = sicore_update_node(r->sched, buf, n, &err);
    sicore_buffer_free(err);
}

static int32_t cb_update_node(void *ud, const uint8_t *msg, size_t len, sicore_reply *error) {
    (void)error;
    recorder *r = ud;
    Si__V1__NodeResponse *m = si__v1__node_response__unpack(NULL, len, msg);
    pthread_mutex_lock(&r->mu);
    enter(r);
    bool probe = !r->probed && r->sched != NULL;
    pthread_mutex_unlock(&r->mu);
    if (probe) probe_reentrancy(r);
    pthread_mutex_lock(&r->mu);
    if (probe) r->probed = true;
    if (!m) {
        r->decode_failures++;
    } else {
        r->nodes_accepted += (int)m->n_accepted;
        r->nodes_rejected += (int)m->n_rejected;
        for (size_t i = 0; i < m->n_rejected; i++)
            fprintf(stderr, "  [%s] rejected node %s: %s\n", r->name, m->rejected[i]->nodeid,
                    m->rejected[i]->reason);
    }
    leave(r);
    if (m) si__v1__node_response__free_unpacked(m, NULL);
    return 0;
}

static int32_t cb_update_application(void *ud, const uint8_t *msg, size_t len, sicore_reply *error) {
    (void)error;
    recorder *r = ud;
    Si__V1__ApplicationResponse *m = si__v1__application_response__unpack(NULL, len, msg);
    pthread_mutex_lock(&r->mu);
    enter(r);
    if (!m) {
        r->decode_failures++;
    } else {
        r->apps_accepted += (int)m->n_accepted;
        if (m->n_accepted > 0) copy_str(r->accepted_app, m->accepted[0]->applicationid);
        r->apps_rejected += (int)m->n_rejected;
        for (size_t i = 0; i < m->n_rejected; i++)
            fprintf(stderr, "  [%s] rejected app %s: %s\n", r->name, m->rejected[i]->applicationid,
                    m->rejected[i]->reason);
        r->apps_updated += (int)m->n_updated;
    }
    leave(r);
    if (m) si__v1__application_response__free_unpacked(m, NULL);
    return 0;
}

static int32_t cb_predicates(void *ud, const uint8_t *msg, size_t len, sicore_reply *error) {
    (void)error;
    recorder *r = ud;
    Si__V1__PredicatesArgs *m = si__v1__predicates_args__unpack(NULL, len, msg);
    pthread_mutex_lock(&r->mu);
    enter(r);
    if (!m) {
        r->decode_failures++;
    } else {
        r->predicates_calls++;
        if (m->allocationkey[0] == '\0' ||
            (strcmp(m->nodeid, "node-1") != 0 && strcmp(m->nodeid, "node-2") != 0))
            r->predicates_bad_args++;
    }
    leave(r);
    if (m) si__v1__predicates_args__free_unpacked(m, NULL);
    return 0; /* every node fits */
}

static int32_t cb_resync(void *ud, const uint8_t *msg, size_t len, sicore_reply *error) {
    (void)error;
    recorder *r = ud;
    Si__V1__ReSyncSchedulerCacheArgs *m = si__v1__re_sync_scheduler_cache_args__unpack(NULL, len, msg);
    pthread_mutex_lock(&r->mu);
    enter(r);
    if (!m) {
        r->decode_failures++;
    } else {
        for (size_t i = 0; i < m->n_assumedallocations && r->n_assumed < MAX_KEYS; i++) {
            copy_str(r->assumed_key[r->n_assumed], m->assumedallocations[i]->allocationkey);
            copy_str(r->assumed_node[r->n_assumed], m->assumedallocations[i]->nodeid);
            r->n_assumed++;
        }
        for (size_t i = 0; i < m->n_forgetallocations && r->n_forgot < MAX_KEYS; i++)
            copy_str(r->forgot_key[r->n_forgot++], m->forgetallocations[i]->allocationkey);
    }
    leave(r);
    if (m) si__v1__re_sync_scheduler_cache_args__free_unpacked(m, NULL);
    return 0;
}

static void cb_send_event(void *ud, const uint8_t *msg, size_t len) {
    recorder *r = ud;
    Sicore__V1__EventRecords *m = sicore__v1__event_records__unpack(NULL, len, msg);
    pthread_mutex_lock(&r->mu);
    enter(r);
    if (!m) {
        r->decode_failures++;
    } else {
        r->event_batches++;
        r->events += (int)m->n_events;
    }
    leave(r);
    if (m) sicore__v1__event_records__free_unpacked(m, NULL);
}

static void cb_sched_state(void *ud, const uint8_t *msg, size_t len) {
    recorder *r = ud;
    Si__V1__UpdateContainerSchedulingStateRequest *m =
        si__v1__update_container_scheduling_state_request__unpack(NULL, len, msg);
    pthread_mutex_lock(&r->mu);
    enter(r);
    if (!m) r->decode_failures++;
    else r->sched_state_calls++;
    leave(r);
    if (m) si__v1__update_container_scheduling_state_request__free_unpacked(m, NULL);
}

static void cb_update_configuration(void *ud, const uint8_t *msg, size_t len, sicore_reply *response) {
    recorder *r = ud;
    Si__V1__UpdateConfigurationRequest *m = si__v1__update_configuration_request__unpack(NULL, len, msg);
    pthread_mutex_lock(&r->mu);
    enter(r);
    if (!m) r->decode_failures++;
    else r->config_calls++;
    leave(r);
    if (m) si__v1__update_configuration_request__free_unpacked(m, NULL);
    Si__V1__UpdateConfigurationResponse resp = SI__V1__UPDATE_CONFIGURATION_RESPONSE__INIT;
    resp.success = 1;
    uint8_t buf[64];
    size_t n = si__v1__update_configuration_response__pack(&resp, buf);
    sicore_reply_set(response, buf, n);
}

static void cb_release(void *ud) {
    recorder *r = ud;
    pthread_mutex_lock(&r->mu);
    r->release_calls++;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

sicore_callbacks callbacks_for(recorder *r) {
    sicore_callbacks cb = {
        .struct_size = sizeof(sicore_callbacks),
        .user_data = r,
        .update_allocation = cb_update_allocation,
        .update_application = cb_update_application,
        .update_node = cb_update_node,
        .predicates = cb_predicates,
        .resync_scheduler_cache = cb_resync,
        .send_event = cb_send_event,
        .update_container_scheduling_state = cb_sched_state,
        .update_configuration = cb_update_configuration,
        .release = cb_release,
    };
    return cb;
}


/* ------------------------------------------------------------------ */
/* Waiting                                                             */
/* ------------------------------------------------------------------ */


/* Waits up to WAIT_SECONDS for pred (evaluated under the mutex). */
bool wait_for(recorder *r, pred_fn pred, const void *arg, const char *what) {
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += WAIT_SECONDS;
    pthread_mutex_lock(&r->mu);
    bool ok = pred(r, arg);
    while (!ok) {
        int rc = pthread_cond_timedwait(&r->cv, &r->mu, &deadline);
        ok = pred(r, arg);
        if (rc == ETIMEDOUT) break;
    }
    pthread_mutex_unlock(&r->mu);
    CHECK(ok, "timed out after %d s waiting for %s", WAIT_SECONDS, what);
    return ok;
}

bool p_nodes(recorder *r, const void *arg) { return r->nodes_accepted + r->nodes_rejected >= *(const int *)arg; }
bool p_apps(recorder *r, const void *arg) { return r->apps_accepted + r->apps_rejected >= *(const int *)arg; }
bool p_allocs(recorder *r, const void *arg) { return r->n_allocs >= *(const int *)arg; }
bool p_forgot(recorder *r, const void *arg) { return r->n_forgot >= *(const int *)arg; }

bool p_release(recorder *r, const void *arg) { return r->release_calls >= *(const int *)arg; }

bool p_released_uuid(recorder *r, const void *arg) {
    for (int i = 0; i < r->n_allocs; i++)
        if (strcmp(r->allocs[i].uuid, (const char *)arg) == 0) return r->allocs[i].released;
    return false;
}

bool p_all_released(recorder *r, const void *arg) {
    (void)arg;
    for (int i = 0; i < r->n_allocs; i++)
        if (!r->allocs[i].released) return false;
    return true;
}

static bool p_alloc_key(recorder *r, const void *arg) {
    for (int i = 0; i < r->n_allocs; i++)
        if (strcmp(r->allocs[i].key, (const char *)arg) == 0) return true;
    return false;
}


/* ------------------------------------------------------------------ */
/* Messages                                                            */
/* ------------------------------------------------------------------ */

packed pack_msg(const ProtobufCMessage *m) {
    packed p;
    p.len = protobuf_c_message_get_packed_size(m);
    p.data = malloc(p.len ? p.len : 1);
    if (!p.data) {
        perror("malloc");
        exit(2);
    }
    protobuf_c_message_pack(m, p.data);
    return p;
}


Si__V1__Resource *make_resource(resource_buf *b, int64_t memory, int64_t vcore) {
    static const char *names[2] = {"memory", "vcore"};
    int64_t values[2] = {memory, vcore};
    for (int i = 0; i < 2; i++) {
        si__v1__quantity__init(&b->q[i]);
        b->q[i].value = values[i];
        si__v1__resource__resources_entry__init(&b->e[i]);
        b->e[i].key = (char *)names[i];
        b->e[i].value = &b->q[i];
        b->ep[i] = &b->e[i];
    }
    si__v1__resource__init(&b->res);
    b->res.n_resources = 2;
    b->res.resources = b->ep;
    return &b->res;
}

sicore_status send_ask(sicore_scheduler *s, const char *rm, const char *key, int max,
                       sicore_buffer *err) {
    resource_buf rb;
    Si__V1__AllocationAsk ask = SI__V1__ALLOCATION_ASK__INIT;
    ask.allocationkey = (char *)key;
    ask.applicationid = "app-1";
    ask.partitionname = "default";
    ask.resourceask = make_resource(&rb, 100, 1);
    ask.maxallocations = max;
    Si__V1__AllocationAsk *asks[1] = {&ask};
    Si__V1__AllocationRequest req = SI__V1__ALLOCATION_REQUEST__INIT;
    req.n_asks = 1;
    req.asks = asks;
    req.rmid = (char *)rm;
    packed p = pack_msg(&req.base);
    sicore_status st = sicore_update_allocation(s, p.data, p.len, err);
    free(p.data);
    return st;
}

/* Asks for one more allocation with a fresh key and waits for it. */
void still_allocates(sicore_scheduler *s, recorder *r, const char *after) {
    static int seq;
    char key[STR], what[2 * STR];
    snprintf(key, sizeof key, "probe-%d", ++seq);
    snprintf(what, sizeof what, "allocation %s after %s", key, after);
    sicore_buffer err = {NULL, 0};
    expect_ok(send_ask(s, "c-rm", key, 1, &err), &err, what);
    wait_for(r, p_alloc_key, key, what);
}
