/*
 * End-to-end test of the SI v1.x family of the sicore C ABI
 * (sicore_v1_*), with protobuf-c messages generated from proto/si18.
 *
 * One scheduler, one v1 RM "c-rm1" registered with its configuration text
 * and extraConfig; a node created with CREATE_DRAIN (answered), made
 * schedulable; one application; a request answered in `new` by its key; a
 * release by key answered in `released`; a configuration update with
 * invalid YAML (refused, old queues stay) and one with the same text (a
 * no-op); a v0.12 call for the v1 RM (refused); a table too short for the
 * family (refused and not taken); teardown with `release` called once.
 * Prints "N passed, M failed" and exits non-zero on failure.
 */
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

#define WAIT_SECONDS 10
#define STR 128

static int g_passed, g_failed;

static void check_(bool ok, const char *file, int line, const char *fmt, ...) {
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
#define CHECK(cond, ...) check_((cond), __FILE__, __LINE__, __VA_ARGS__)

static void take_error(sicore_buffer *err, char *out) {
    snprintf(out, STR * 4, "%.*s", (int)err->len, err->data ? (const char *)err->data : "");
    sicore_buffer_free(*err);
    err->data = NULL;
    err->len = 0;
}

typedef struct recorder {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int nodes_accepted, nodes_rejected;
    int apps_accepted;
    char new_key[STR], new_node[STR];
    int n_new;
    char released_key[STR];
    int released_type;
    int n_released;
    int events;
    int decode_failures;
    int release_calls;
} recorder;

static void leave(recorder *r) {
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

static int32_t cb_update_allocation(void *ud, const uint8_t *msg, size_t len, sicore_reply *error) {
    (void)error;
    recorder *r = ud;
    Si__V1__AllocationResponse *m = si__v1__allocation_response__unpack(NULL, len, msg);
    pthread_mutex_lock(&r->mu);
    if (!m) {
        r->decode_failures++;
    } else {
        for (size_t i = 0; i < m->n_new_; i++) {
            snprintf(r->new_key, STR, "%s", m->new_[i]->allocationkey);
            snprintf(r->new_node, STR, "%s", m->new_[i]->nodeid);
            r->n_new++;
        }
        for (size_t i = 0; i < m->n_released; i++) {
            snprintf(r->released_key, STR, "%s", m->released[i]->allocationkey);
            r->released_type = m->released[i]->terminationtype;
            r->n_released++;
        }
        si__v1__allocation_response__free_unpacked(m, NULL);
    }
    leave(r);
    return 0;
}

static int32_t cb_update_application(void *ud, const uint8_t *msg, size_t len, sicore_reply *error) {
    (void)error;
    recorder *r = ud;
    Si__V1__ApplicationResponse *m = si__v1__application_response__unpack(NULL, len, msg);
    pthread_mutex_lock(&r->mu);
    if (!m) {
        r->decode_failures++;
    } else {
        r->apps_accepted += (int)m->n_accepted;
        si__v1__application_response__free_unpacked(m, NULL);
    }
    leave(r);
    return 0;
}

static int32_t cb_update_node(void *ud, const uint8_t *msg, size_t len, sicore_reply *error) {
    (void)error;
    recorder *r = ud;
    Si__V1__NodeResponse *m = si__v1__node_response__unpack(NULL, len, msg);
    pthread_mutex_lock(&r->mu);
    if (!m) {
        r->decode_failures++;
    } else {
        r->nodes_accepted += (int)m->n_accepted;
        r->nodes_rejected += (int)m->n_rejected;
        si__v1__node_response__free_unpacked(m, NULL);
    }
    leave(r);
    return 0;
}

static void cb_send_event(void *ud, const uint8_t *msg, size_t len) {
    (void)msg;
    recorder *r = ud;
    pthread_mutex_lock(&r->mu);
    r->events += len > 0;
    leave(r);
}

static void cb_release(void *ud) {
    recorder *r = ud;
    pthread_mutex_lock(&r->mu);
    r->release_calls++;
    leave(r);
}

typedef bool (*pred_fn)(recorder *r);

static bool wait_for(recorder *r, pred_fn pred, const char *what) {
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += WAIT_SECONDS;
    pthread_mutex_lock(&r->mu);
    bool ok;
    while (!(ok = pred(r))) {
        if (pthread_cond_timedwait(&r->cv, &r->mu, &deadline) != 0 && !(ok = pred(r))) break;
    }
    pthread_mutex_unlock(&r->mu);
    CHECK(ok, "timed out waiting for %s", what);
    return ok;
}

static bool p_node(recorder *r) { return r->nodes_accepted + r->nodes_rejected >= 1; }
static bool p_app(recorder *r) { return r->apps_accepted >= 1; }
static bool p_new(recorder *r) { return r->n_new >= 1; }
static bool p_released(recorder *r) { return r->n_released >= 1; }

typedef struct {
    uint8_t *data;
    size_t len;
} packed;

static packed pack_msg(const ProtobufCMessage *m) {
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

typedef sicore_status (*update_fn)(sicore_scheduler *, const uint8_t *, size_t, sicore_buffer *);

static sicore_status send(sicore_scheduler *s, update_fn f, const ProtobufCMessage *m, char *error) {
    packed p = pack_msg(m);
    sicore_buffer err = {NULL, 0};
    sicore_status st = f(s, p.data, p.len, &err);
    take_error(&err, error);
    free(p.data);
    return st;
}

static const char *CONFIG =
    "partitions:\n"
    "  - name: default\n"
    "    placementrules:\n"
    "      - name: provided\n"
    "        create: true\n"
    "    queues:\n"
    "      - name: root\n"
    "        submitacl: '*'\n"
    "        queues:\n"
    "          - name: a\n";

static sicore_v1_callbacks callbacks_for(recorder *r) {
    sicore_v1_callbacks cb;
    memset(&cb, 0, sizeof cb);
    cb.struct_size = sizeof cb;
    cb.user_data = r;
    cb.update_allocation = cb_update_allocation;
    cb.update_application = cb_update_application;
    cb.update_node = cb_update_node;
    cb.send_event = cb_send_event;
    cb.release = cb_release;
    return cb;
}

static sicore_status do_register(sicore_scheduler *s, const sicore_v1_callbacks *cb, const char *config,
                                 char *error) {
    Si__V1__RegisterResourceManagerRequest__ExtraConfigEntry level =
        SI__V1__REGISTER_RESOURCE_MANAGER_REQUEST__EXTRA_CONFIG_ENTRY__INIT;
    level.key = "log.level";
    level.value = "info";
    Si__V1__RegisterResourceManagerRequest__ExtraConfigEntry *extra[1] = {&level};
    Si__V1__RegisterResourceManagerRequest req = SI__V1__REGISTER_RESOURCE_MANAGER_REQUEST__INIT;
    req.rmid = "c-rm1";
    req.version = "v1.8.0";
    req.policygroup = "queues";
    req.config = (char *)config;
    req.n_extraconfig = 1;
    req.extraconfig = extra;
    packed p = pack_msg(&req.base);
    sicore_buffer resp = {NULL, 0}, err = {NULL, 0};
    sicore_status st = sicore_v1_register_resource_manager(s, p.data, p.len, cb, &resp, &err);
    sicore_buffer_free(resp);
    take_error(&err, error);
    free(p.data);
    return st;
}

static sicore_status node_action(sicore_scheduler *s, int action, char *error) {
    Si__V1__Quantity mem = SI__V1__QUANTITY__INIT, cpu = SI__V1__QUANTITY__INIT;
    mem.value = 1000;
    cpu.value = 10;
    Si__V1__Resource__ResourcesEntry e[2] = {SI__V1__RESOURCE__RESOURCES_ENTRY__INIT,
                                             SI__V1__RESOURCE__RESOURCES_ENTRY__INIT};
    e[0].key = "memory";
    e[0].value = &mem;
    e[1].key = "vcore";
    e[1].value = &cpu;
    Si__V1__Resource__ResourcesEntry *ep[2] = {&e[0], &e[1]};
    Si__V1__Resource res = SI__V1__RESOURCE__INIT;
    res.n_resources = 2;
    res.resources = ep;
    Si__V1__NodeInfo node = SI__V1__NODE_INFO__INIT;
    node.nodeid = "node-1";
    node.action = action;
    if (action == SI__V1__NODE_INFO__ACTION_FROM_RM__CREATE_DRAIN) node.schedulableresource = &res;
    Si__V1__NodeInfo *nodes[1] = {&node};
    Si__V1__NodeRequest req = SI__V1__NODE_REQUEST__INIT;
    req.rmid = "c-rm1";
    req.n_nodes = 1;
    req.nodes = nodes;
    return send(s, sicore_v1_update_node, &req.base, error);
}

static sicore_status update_config(sicore_scheduler *s, const char *config, char *error) {
    Si__V1__UpdateConfigurationRequest req = SI__V1__UPDATE_CONFIGURATION_REQUEST__INIT;
    req.rmid = "c-rm1";
    req.policygroup = "queues";
    req.config = (char *)config;
    return send(s, sicore_v1_update_configuration, &req.base, error);
}

int main(void) {
    char error[STR * 4];
    sicore_scheduler *s = NULL;
    sicore_buffer err = {NULL, 0};
    CHECK(sicore_new(NULL, 0, &s, &err) == SICORE_OK, "sicore_new");
    sicore_buffer_free(err);

    /* A table that stops before update_node is refused and not taken. */
    recorder *short_rec = calloc(1, sizeof *short_rec);
    sicore_v1_callbacks short_cb = callbacks_for(short_rec);
    short_cb.struct_size = offsetof(sicore_v1_callbacks, update_node);
    CHECK(do_register(s, &short_cb, CONFIG, error) == SICORE_INVALID_ARGUMENT, "short table: %s", error);
    CHECK(short_rec->release_calls == 0, "a refused table is not released");
    free(short_rec);

    /* Invalid YAML fails the registration; release runs once right away. */
    recorder *bad = calloc(1, sizeof *bad);
    pthread_mutex_init(&bad->mu, NULL);
    pthread_cond_init(&bad->cv, NULL);
    sicore_v1_callbacks bad_cb = callbacks_for(bad);
    CHECK(do_register(s, &bad_cb, "partitions: [\n  - name", error) == SICORE_REJECTED,
          "invalid YAML at registration: %s", error);
    CHECK(bad->release_calls == 1, "failed registration releases its table once");

    recorder *r = calloc(1, sizeof *r);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, &ca);
    pthread_condattr_destroy(&ca);
    sicore_v1_callbacks cb = callbacks_for(r);
    CHECK(do_register(s, &cb, CONFIG, error) == SICORE_OK, "register: %s", error);

    CHECK(node_action(s, SI__V1__NODE_INFO__ACTION_FROM_RM__CREATE_DRAIN, error) == SICORE_OK,
          "CREATE_DRAIN: %s", error);
    wait_for(r, p_node, "the node's answer");
    CHECK(r->nodes_accepted == 1, "node accepted");
    CHECK(node_action(s, SI__V1__NODE_INFO__ACTION_FROM_RM__DRAIN_TO_SCHEDULABLE, error) == SICORE_OK,
          "DRAIN_TO_SCHEDULABLE: %s", error);

    Si__V1__UserGroupInformation ugi = SI__V1__USER_GROUP_INFORMATION__INIT;
    ugi.user = "alice";
    Si__V1__AddApplicationRequest add = SI__V1__ADD_APPLICATION_REQUEST__INIT;
    add.applicationid = "app-1";
    add.queuename = "root.a";
    add.ugi = &ugi;
    Si__V1__AddApplicationRequest *adds[1] = {&add};
    Si__V1__ApplicationRequest apps = SI__V1__APPLICATION_REQUEST__INIT;
    apps.rmid = "c-rm1";
    apps.n_new_ = 1;
    apps.new_ = adds;
    CHECK(send(s, sicore_v1_update_application, &apps.base, error) == SICORE_OK, "app: %s", error);
    wait_for(r, p_app, "app accepted");

    Si__V1__Quantity mem = SI__V1__QUANTITY__INIT;
    mem.value = 100;
    Si__V1__Resource__ResourcesEntry e = SI__V1__RESOURCE__RESOURCES_ENTRY__INIT;
    e.key = "memory";
    e.value = &mem;
    Si__V1__Resource__ResourcesEntry *ep[1] = {&e};
    Si__V1__Resource res = SI__V1__RESOURCE__INIT;
    res.n_resources = 1;
    res.resources = ep;
    Si__V1__Allocation alloc = SI__V1__ALLOCATION__INIT;
    alloc.allocationkey = "pod-1";
    alloc.applicationid = "app-1";
    alloc.resourceperalloc = &res;
    alloc.priority = 5;
    Si__V1__Allocation *allocs[1] = {&alloc};
    Si__V1__AllocationRequest areq = SI__V1__ALLOCATION_REQUEST__INIT;
    areq.rmid = "c-rm1";
    areq.n_allocations = 1;
    areq.allocations = allocs;
    CHECK(send(s, sicore_v1_update_allocation, &areq.base, error) == SICORE_OK, "allocation: %s", error);
    if (wait_for(r, p_new, "new")) {
        CHECK(strcmp(r->new_key, "pod-1") == 0, "new names the key: %s", r->new_key);
        CHECK(strcmp(r->new_node, "node-1") == 0, "new names the node: %s", r->new_node);
    }

    /* A v0.12 call for the v1 RM is refused, naming its edition. */
    CHECK(send(s, sicore_update_allocation, &areq.base, error) == SICORE_REJECTED, "v0.12 call refused");
    CHECK(strstr(error, "SI v1.x") != NULL, "refusal names the edition: %s", error);

    Si__V1__AllocationRelease rel = SI__V1__ALLOCATION_RELEASE__INIT;
    rel.applicationid = "app-1";
    rel.allocationkey = "pod-1";
    rel.terminationtype = SI__V1__TERMINATION_TYPE__STOPPED_BY_RM;
    Si__V1__AllocationRelease *rels[1] = {&rel};
    Si__V1__AllocationReleasesRequest releases = SI__V1__ALLOCATION_RELEASES_REQUEST__INIT;
    releases.n_allocationstorelease = 1;
    releases.allocationstorelease = rels;
    Si__V1__AllocationRequest rreq = SI__V1__ALLOCATION_REQUEST__INIT;
    rreq.rmid = "c-rm1";
    rreq.releases = &releases;
    CHECK(send(s, sicore_v1_update_allocation, &rreq.base, error) == SICORE_OK, "release: %s", error);
    if (wait_for(r, p_released, "released")) {
        CHECK(strcmp(r->released_key, "pod-1") == 0, "released names the key: %s", r->released_key);
        CHECK(r->released_type == SI__V1__TERMINATION_TYPE__STOPPED_BY_RM, "released type");
    }

    CHECK(update_config(s, "partitions: {{{", error) == SICORE_REJECTED, "invalid YAML update: %s",
          error);
    CHECK(update_config(s, CONFIG, error) == SICORE_OK, "same text: %s", error);

    CHECK(sicore_shutdown(s, &err) == SICORE_OK, "shutdown");
    sicore_buffer_free(err);
    CHECK(r->release_calls == 1, "release once at shutdown (%d)", r->release_calls);
    CHECK(r->decode_failures == 0, "every callback message decodes");
    sicore_free(s);

    pthread_mutex_destroy(&bad->mu);
    pthread_cond_destroy(&bad->cv);
    free(bad);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    free(r);
    printf("sicore_v1_test: %d passed, %d failed\n", g_passed, g_failed);
    return g_failed ? 1 : 0;
}
