/*
 * End-to-end test of the sicore C ABI with protobuf-c messages.
 *
 * One scheduler with default options, one resource manager "c-rm" whose
 * callbacks record what arrives; two nodes, one application, one ask for
 * three allocations, a release, a state dump, bad inputs (each followed by
 * a fresh allocation to show the scheduler still works), a second
 * scheduler with an invalid in-memory configuration, application removal,
 * and teardown. Prints "N passed, M failed" and exits non-zero on failure.
 */
#include "sicore_test.h"

/* ------------------------------------------------------------------ */
/* Logger                                                              */
/* ------------------------------------------------------------------ */

static pthread_mutex_t g_log_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_log_records;

static void log_fn(void *ud, int32_t level, const uint8_t *target, size_t target_len,
                   const uint8_t *message, size_t message_len) {
    (void)ud;
    pthread_mutex_lock(&g_log_mu);
    g_log_records++;
    if (level <= SICORE_LOG_WARN)
        fprintf(stderr, "  [sicore %s %.*s] %.*s\n", level == SICORE_LOG_ERROR ? "error" : "warn",
                (int)target_len, (const char *)target, (int)message_len, (const char *)message);
    pthread_mutex_unlock(&g_log_mu);
}

/* ------------------------------------------------------------------ */
/* The scenario                                                        */
/* ------------------------------------------------------------------ */

static bool is_node(const char *n) { return strcmp(n, "node-1") == 0 || strcmp(n, "node-2") == 0; }

static void test_header_cxx(void) {
    printf("C++ header check\n");
    CHECK(sicore_header_cxx_check() == 0, "C++17 translation unit reported failures");
    const char *v = sicore_version();
    CHECK(v != NULL && v[0] != '\0', "sicore_version() is empty");
    printf("  sicore version %s\n", v ? v : "(null)");
}

static void test_status_str(void) {
    printf("sicore_status_str\n");
    for (int v = SICORE_OK; v <= SICORE_INTERNAL; v++) {
        const char *got = sicore_status_str(v);
        CHECK(got != NULL && strcmp(got, enumerator_name((sicore_status)v)) == 0,
              "sicore_status_str(%d) = %s, want %s", v, got ? got : "(null)",
              enumerator_name((sicore_status)v));
    }
    int unknown[] = {-1, SICORE_INTERNAL + 1, 1 << 30};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        const char *got = sicore_status_str(unknown[i]);
        CHECK(got != NULL && strcmp(got, "unknown sicore_status") == 0,
              "sicore_status_str(%d) = %s, want unknown sicore_status", unknown[i], got ? got : "(null)");
    }
}

static void test_new_bad_options(void) {
    printf("sicore_new with garbage options\n");
    sicore_scheduler *s = NULL;
    sicore_buffer err = {NULL, 0};
    const uint8_t garbage[] = {0xff, 0xff, 0xff};
    expect_fail(sicore_new(garbage, sizeof garbage, &s, &err), SICORE_DECODE_ERROR, &err,
                "sicore_new(garbage)");
    CHECK(s == NULL, "sicore_new(garbage) set *out");
    if (s) sicore_free(s);
    expect_fail(sicore_new(NULL, 0, NULL, &err), SICORE_INVALID_ARGUMENT, &err, "sicore_new(out=NULL)");
}

static sicore_scheduler *register_rm(recorder *r) {
    sicore_scheduler *s = NULL;
    sicore_buffer err = {NULL, 0};
    expect_ok(sicore_new(NULL, 0, &s, &err), &err, "sicore_new(NULL options)");
    CHECK(s != NULL, "sicore_new returned no scheduler");
    if (!s) return NULL;
    r->sched = s;

    Si__V1__RegisterResourceManagerRequest reg = SI__V1__REGISTER_RESOURCE_MANAGER_REQUEST__INIT;
    reg.rmid = "c-rm";
    reg.version = "c-test";
    reg.policygroup = "queues";
    packed p = pack_msg(&reg.base);
    sicore_callbacks cb = callbacks_for(r);
    sicore_buffer resp = {NULL, 0};
    expect_ok(sicore_register_resource_manager(s, p.data, p.len, &cb, &resp, &err), &err,
              "register c-rm");
    free(p.data);
    Si__V1__RegisterResourceManagerResponse *rr =
        si__v1__register_resource_manager_response__unpack(NULL, resp.len, resp.data);
    CHECK(rr != NULL, "RegisterResourceManagerResponse does not decode");
    if (rr) si__v1__register_resource_manager_response__free_unpacked(rr, NULL);
    sicore_buffer_free(resp);
    return s;
}

static void add_nodes(sicore_scheduler *s, recorder *r) {
    printf("nodes\n");
    resource_buf rb[2];
    Si__V1__NodeInfo ni[2];
    Si__V1__NodeInfo *nip[2];
    const char *ids[2] = {"node-1", "node-2"};
    for (int i = 0; i < 2; i++) {
        si__v1__node_info__init(&ni[i]);
        ni[i].nodeid = (char *)ids[i];
        ni[i].action = SI__V1__NODE_INFO__ACTION_FROM_RM__CREATE;
        ni[i].schedulableresource = make_resource(&rb[i], 1000, 10);
        nip[i] = &ni[i];
    }
    Si__V1__NodeRequest req = SI__V1__NODE_REQUEST__INIT;
    req.n_nodes = 2;
    req.nodes = nip;
    req.rmid = "c-rm";
    packed p = pack_msg(&req.base);
    sicore_buffer err = {NULL, 0};
    expect_ok(sicore_update_node(s, p.data, p.len, &err), &err, "update_node(2 nodes)");
    free(p.data);
    int two = 2;
    wait_for(r, p_nodes, &two, "2 node responses");
    pthread_mutex_lock(&r->mu);
    CHECK(r->nodes_accepted == 2, "nodes accepted: want 2, got %d", r->nodes_accepted);
    CHECK(r->nodes_rejected == 0, "nodes rejected: want 0, got %d", r->nodes_rejected);
    pthread_mutex_unlock(&r->mu);
}

static void check_reentrancy(recorder *r) {
    printf("synchronous calls from inside a callback\n");
    pthread_mutex_lock(&r->mu);
    CHECK(r->probed, "re-entrancy probe did not run");
    CHECK(r->probe_dump == SICORE_WOULD_DEADLOCK, "state_dump in callback: want WOULD_DEADLOCK, got %s",
          status_name(r->probe_dump));
    CHECK(r->probe_register == SICORE_WOULD_DEADLOCK,
          "register in callback: want WOULD_DEADLOCK, got %s", status_name(r->probe_register));
    CHECK(r->probe_update == SICORE_OK, "update_node in callback: want OK, got %s",
          status_name(r->probe_update));
    pthread_mutex_unlock(&r->mu);
}

static void add_app(sicore_scheduler *s, recorder *r) {
    printf("application\n");
    Si__V1__UserGroupInformation ugi = SI__V1__USER_GROUP_INFORMATION__INIT;
    ugi.user = "alice";
    Si__V1__AddApplicationRequest app = SI__V1__ADD_APPLICATION_REQUEST__INIT;
    app.applicationid = "app-1";
    app.queuename = "root.a";
    app.partitionname = "default";
    app.ugi = &ugi;
    Si__V1__AddApplicationRequest *apps[1] = {&app};
    Si__V1__ApplicationRequest req = SI__V1__APPLICATION_REQUEST__INIT;
    req.n_new_ = 1;
    req.new_ = apps;
    req.rmid = "c-rm";
    packed p = pack_msg(&req.base);
    sicore_buffer err = {NULL, 0};
    expect_ok(sicore_update_application(s, p.data, p.len, &err), &err, "update_application(new)");
    free(p.data);
    int one = 1;
    wait_for(r, p_apps, &one, "application response");
    pthread_mutex_lock(&r->mu);
    CHECK(r->apps_accepted == 1, "apps accepted: want 1, got %d", r->apps_accepted);
    CHECK(strcmp(r->accepted_app, "app-1") == 0, "accepted app: want app-1, got '%s'", r->accepted_app);
    pthread_mutex_unlock(&r->mu);
}

static void allocate_three(sicore_scheduler *s, recorder *r) {
    printf("ask ask-1 x3\n");
    sicore_buffer err = {NULL, 0};
    expect_ok(send_ask(s, "c-rm", "ask-1", 3, &err), &err, "update_allocation(ask-1 x3)");
    int three = 3;
    wait_for(r, p_allocs, &three, "3 allocations");

    pthread_mutex_lock(&r->mu);
    CHECK(r->n_allocs == 3, "allocations: want 3, got %d", r->n_allocs);
    for (int i = 0; i < r->n_allocs && i < 3; i++) {
        const alloc_rec *a = &r->allocs[i];
        CHECK(a->uuid[0] != '\0', "allocation %d: empty UUID", i);
        for (int j = 0; j < i; j++)
            CHECK(strcmp(a->uuid, r->allocs[j].uuid) != 0, "allocations %d and %d share UUID %s", j, i, a->uuid);
        CHECK(is_node(a->node), "allocation %d: nodeID '%s' is not one of ours", i, a->node);
        CHECK(strcmp(a->app, "app-1") == 0, "allocation %d: applicationID '%s'", i, a->app);
        CHECK(strcmp(a->key, "ask-1") == 0, "allocation %d: allocationKey '%s'", i, a->key);
        CHECK(strcmp(a->queue, "root.a") == 0, "allocation %d: queueName '%s'", i, a->queue);
        CHECK(strcmp(a->partition, "default") == 0, "allocation %d: partitionName '%s'", i, a->partition);
        /* ReSyncSchedulerCache is delivered before the allocation message. */
        CHECK(a->assumed_seen >= i + 1, "allocation %d arrived before its assumed allocation (%d assumed seen)",
              i, a->assumed_seen);
    }
    /* Every allocation has a matching assumed allocation (key and node). */
    bool used[MAX_KEYS] = {false};
    for (int i = 0; i < r->n_allocs && i < 3; i++) {
        bool matched = false;
        for (int j = 0; j < r->n_assumed && !matched; j++) {
            if (!used[j] && strcmp(r->assumed_key[j], r->allocs[i].key) == 0 &&
                strcmp(r->assumed_node[j], r->allocs[i].node) == 0) {
                used[j] = true;
                matched = true;
            }
        }
        CHECK(matched, "allocation %d (%s on %s) has no assumed allocation", i, r->allocs[i].key,
              r->allocs[i].node);
    }
    CHECK(r->predicates_calls > 0, "predicates was never called");
    CHECK(r->predicates_bad_args == 0, "predicates got %d calls with bad arguments", r->predicates_bad_args);
    pthread_mutex_unlock(&r->mu);
}

static void release_one(sicore_scheduler *s, recorder *r) {
    printf("release one allocation\n");
    char uuid[STR];
    pthread_mutex_lock(&r->mu);
    copy_str(uuid, r->allocs[0].uuid);
    int forgot_before = r->n_forgot;
    pthread_mutex_unlock(&r->mu);

    Si__V1__AllocationRelease rel = SI__V1__ALLOCATION_RELEASE__INIT;
    rel.partitionname = "default";
    rel.applicationid = "app-1";
    rel.uuid = uuid;
    rel.terminationtype = SI__V1__TERMINATION_TYPE__STOPPED_BY_RM;
    rel.message = "c test releases it";
    Si__V1__AllocationRelease *rels[1] = {&rel};
    Si__V1__AllocationReleasesRequest rr = SI__V1__ALLOCATION_RELEASES_REQUEST__INIT;
    rr.n_allocationstorelease = 1;
    rr.allocationstorelease = rels;
    Si__V1__AllocationRequest req = SI__V1__ALLOCATION_REQUEST__INIT;
    req.releases = &rr;
    req.rmid = "c-rm";
    packed p = pack_msg(&req.base);
    sicore_buffer err = {NULL, 0};
    expect_ok(sicore_update_allocation(s, p.data, p.len, &err), &err, "update_allocation(release)");
    free(p.data);

    wait_for(r, p_released_uuid, uuid, "release echo");
    int want = forgot_before + 1;
    wait_for(r, p_forgot, &want, "resync forgetAllocations");
    pthread_mutex_lock(&r->mu);
    CHECK(r->allocs[0].termination_type == SI__V1__TERMINATION_TYPE__STOPPED_BY_RM,
          "released terminationType: want STOPPED_BY_RM(1), got %d", r->allocs[0].termination_type);
    for (int i = 1; i < r->n_allocs; i++)
        CHECK(!r->allocs[i].released, "allocation %d released too", i);
    CHECK(r->n_forgot > forgot_before && strcmp(r->forgot_key[forgot_before], "ask-1") == 0,
          "forgotten allocation key: want ask-1, got '%s'",
          r->n_forgot > forgot_before ? r->forgot_key[forgot_before] : "");
    CHECK(r->released_unknown == 0, "%d released UUIDs were never allocated", r->released_unknown);
    pthread_mutex_unlock(&r->mu);
}

static void state_dump(sicore_scheduler *s) {
    printf("state dump\n");
    sicore_buffer json = {NULL, 0}, err = {NULL, 0};
    expect_ok(sicore_state_dump(s, &json, &err), &err, "sicore_state_dump");
    CHECK(json.data != NULL && json.len > 0, "state dump is empty");
    if (json.data && json.len > 0) {
        char *text = malloc(json.len + 1);
        if (!text) exit(2);
        memcpy(text, json.data, json.len);
        text[json.len] = '\0';
        CHECK(text[0] == '{', "state dump does not start with '{'");
        CHECK(strstr(text, "\"app-1\"") != NULL, "state dump lacks \"app-1\"");
        CHECK(strstr(text, "root.a") != NULL, "state dump lacks root.a");
        CHECK(strstr(text, "node-1") != NULL && strstr(text, "node-2") != NULL, "state dump lacks the nodes");
        free(text);
    }
    sicore_buffer_free(json);
    expect_fail(sicore_state_dump(s, NULL, &err), SICORE_INVALID_ARGUMENT, &err, "state_dump(json_out=NULL)");
}

static void bad_inputs(sicore_scheduler *s, recorder *r) {
    printf("bad inputs\n");
    sicore_buffer err = {NULL, 0};
    const uint8_t garbage[] = {0xff, 0xff, 0xff};

    /* A valid, harmless request for the NULL-scheduler cases. */
    Si__V1__NodeRequest nr = SI__V1__NODE_REQUEST__INIT;
    nr.rmid = "c-rm";
    packed ok = pack_msg(&nr.base);

    /* NULL scheduler. */
    expect_fail(sicore_update_allocation(NULL, ok.data, ok.len, &err), SICORE_INVALID_ARGUMENT, &err,
                "update_allocation(NULL scheduler)");
    expect_fail(sicore_update_application(NULL, ok.data, ok.len, &err), SICORE_INVALID_ARGUMENT, &err,
                "update_application(NULL scheduler)");
    expect_fail(sicore_update_node(NULL, ok.data, ok.len, &err), SICORE_INVALID_ARGUMENT, &err,
                "update_node(NULL scheduler)");
    expect_fail(sicore_update_configuration(NULL, (const uint8_t *)"c-rm", 4, &err), SICORE_INVALID_ARGUMENT,
                &err, "update_configuration(NULL scheduler)");
    sicore_callbacks cb0 = {.struct_size = sizeof cb0};
    expect_fail(sicore_register_resource_manager(NULL, ok.data, ok.len, &cb0, NULL, &err),
                SICORE_INVALID_ARGUMENT, &err, "register(NULL scheduler)");
    still_allocates(s, r, "NULL scheduler");

    /* NULL request with a length. */
    expect_fail(sicore_update_allocation(s, NULL, 5, &err), SICORE_INVALID_ARGUMENT, &err,
                "update_allocation(NULL request)");
    expect_fail(sicore_update_application(s, NULL, 5, &err), SICORE_INVALID_ARGUMENT, &err,
                "update_application(NULL request)");
    expect_fail(sicore_update_node(s, NULL, 5, &err), SICORE_INVALID_ARGUMENT, &err,
                "update_node(NULL request)");
    expect_fail(sicore_register_resource_manager(s, NULL, 5, &cb0, NULL, &err), SICORE_INVALID_ARGUMENT, &err,
                "register(NULL request)");
    expect_fail(sicore_register_resource_manager(s, ok.data, ok.len, NULL, NULL, &err),
                SICORE_INVALID_ARGUMENT, &err, "register(NULL callbacks)");
    still_allocates(s, r, "NULL request");

    /* Garbage bytes. */
    expect_fail(sicore_update_allocation(s, garbage, sizeof garbage, &err), SICORE_DECODE_ERROR, &err,
                "update_allocation(garbage)");
    expect_fail(sicore_update_application(s, garbage, sizeof garbage, &err), SICORE_DECODE_ERROR, &err,
                "update_application(garbage)");
    expect_fail(sicore_update_node(s, garbage, sizeof garbage, &err), SICORE_DECODE_ERROR, &err,
                "update_node(garbage)");
    expect_fail(sicore_register_resource_manager(s, garbage, sizeof garbage, &cb0, NULL, &err),
                SICORE_DECODE_ERROR, &err, "register(garbage)");
    still_allocates(s, r, "garbage bytes");

    /* A failed registration with a real table releases user_data once. */
    {
        recorder *rf = recorder_new("failed-register");
        sicore_callbacks cbf = callbacks_for(rf);
        expect_fail(sicore_register_resource_manager(NULL, ok.data, ok.len, &cbf, NULL, &err),
                    SICORE_INVALID_ARGUMENT, &err, "register(NULL scheduler, real table)");
        CHECK(rf->release_calls == 1, "register(NULL scheduler): release called %d times, want 1",
              rf->release_calls);
        expect_fail(sicore_register_resource_manager(s, garbage, sizeof garbage, &cbf, NULL, &err),
                    SICORE_DECODE_ERROR, &err, "register(garbage, real table)");
        pthread_mutex_lock(&rf->mu);
        CHECK(rf->release_calls == 2, "register(garbage): release called %d times in total, want 2 (once per call)",
              rf->release_calls);
        CHECK(rf->callbacks_total == 0, "failed registrations: %d callbacks ran", rf->callbacks_total);
        pthread_mutex_unlock(&rf->mu);
        recorder_free(rf);
    }
    still_allocates(s, r, "failed registrations");

    /* A struct_size short of the first fields is refused before the table
     * is taken: release does not run, user_data stays ours. */
    {
        recorder *rf = recorder_new("short-table");
        sicore_callbacks cbs = callbacks_for(rf);
        size_t sizes[] = {0, sizeof(size_t), offsetof(sicore_callbacks, update_allocation)};
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            cbs.struct_size = sizes[i];
            expect_fail(sicore_register_resource_manager(s, ok.data, ok.len, &cbs, NULL, &err),
                        SICORE_INVALID_ARGUMENT, &err, "register(struct_size too small)");
        }
        pthread_mutex_lock(&rf->mu);
        CHECK(rf->release_calls == 0, "refused struct_size: release called %d times, want 0",
              rf->release_calls);
        CHECK(rf->callbacks_total == 0, "refused struct_size: %d callbacks ran", rf->callbacks_total);
        pthread_mutex_unlock(&rf->mu);
        recorder_free(rf);
    }
    still_allocates(s, r, "refused struct_size");

    /* Garbage without error_out: still refused, nothing to free. */
    CHECK(sicore_update_allocation(s, garbage, sizeof garbage, NULL) == SICORE_DECODE_ERROR,
          "update_allocation(garbage, error_out=NULL) not DECODE_ERROR");

    /* Unknown rmID. */
    expect_fail(send_ask(s, "no-such-rm", "ask-x", 1, &err), SICORE_REJECTED, &err,
                "update_allocation(unknown rmID)");
    Si__V1__NodeRequest nr2 = SI__V1__NODE_REQUEST__INIT;
    nr2.rmid = "no-such-rm";
    packed unk = pack_msg(&nr2.base);
    expect_fail(sicore_update_node(s, unk.data, unk.len, &err), SICORE_REJECTED, &err,
                "update_node(unknown rmID)");
    free(unk.data);
    Si__V1__ApplicationRequest ar = SI__V1__APPLICATION_REQUEST__INIT;
    ar.rmid = "no-such-rm";
    unk = pack_msg(&ar.base);
    expect_fail(sicore_update_application(s, unk.data, unk.len, &err), SICORE_REJECTED, &err,
                "update_application(unknown rmID)");
    free(unk.data);
    expect_fail(sicore_update_configuration(s, (const uint8_t *)"no-such-rm", 10, &err), SICORE_REJECTED, &err,
                "update_configuration(unknown rmID)");
    still_allocates(s, r, "unknown rmID");

    /* Bad UTF-8 cluster id. */
    expect_fail(sicore_update_configuration(s, garbage, sizeof garbage, &err), SICORE_INVALID_ARGUMENT, &err,
                "update_configuration(bad UTF-8)");

    /* Re-reading the (default) configuration of our RM succeeds. */
    expect_ok(sicore_update_configuration(s, (const uint8_t *)"c-rm", 4, &err), &err,
              "update_configuration(c-rm)");
    still_allocates(s, r, "update_configuration");

    /* Replacing in-memory configuration, for a group c-rm does not use:
     * refused when invalid or unnamed, kept when valid. */
    static const char bad_yaml[] = "partitions: [";
    static const char good_yaml[] = "partitions:\n  - name: default\n    queues:\n      - name: root\n";
    expect_fail(sicore_set_policy_config(s, (const uint8_t *)"spare", 5, (const uint8_t *)bad_yaml,
                                         strlen(bad_yaml), &err),
                SICORE_REJECTED, &err, "set_policy_config(invalid YAML)");
    expect_fail(sicore_set_policy_config(s, NULL, 5, (const uint8_t *)good_yaml, strlen(good_yaml), &err),
                SICORE_INVALID_ARGUMENT, &err, "set_policy_config(NULL group)");
    expect_fail(sicore_set_policy_config(s, garbage, sizeof garbage, (const uint8_t *)good_yaml,
                                         strlen(good_yaml), &err),
                SICORE_INVALID_ARGUMENT, &err, "set_policy_config(bad UTF-8 group)");
    expect_ok(sicore_set_policy_config(s, (const uint8_t *)"spare", 5, (const uint8_t *)good_yaml,
                                       strlen(good_yaml), &err),
              &err, "set_policy_config(spare)");
    still_allocates(s, r, "set_policy_config");
    free(ok.data);
}

/* A second scheduler whose policy group "bad" holds invalid YAML. */
static void bad_config(sicore_scheduler *s, recorder *r) {
    printf("second scheduler with an invalid in-memory config\n");
    Sicore__V1__SchedulerOptions__PolicyConfigsEntry e = SICORE__V1__SCHEDULER_OPTIONS__POLICY_CONFIGS_ENTRY__INIT;
    e.key = "bad";
    e.value = "partitions: [ this is : not valid";
    Sicore__V1__SchedulerOptions__PolicyConfigsEntry *ep[1] = {&e};
    Sicore__V1__SchedulerOptions opts = SICORE__V1__SCHEDULER_OPTIONS__INIT;
    opts.n_policy_configs = 1;
    opts.policy_configs = ep;
    opts.scheduling_interval_ms = 20;
    packed po = pack_msg(&opts.base);

    sicore_scheduler *s2 = NULL;
    sicore_buffer err = {NULL, 0};
    expect_ok(sicore_new(po.data, po.len, &s2, &err), &err, "sicore_new(bad policy config)");
    free(po.data);
    if (!s2) return;

    recorder *rb = recorder_new("bad-rm");
    rb->sched = NULL; /* no probes */
    Si__V1__RegisterResourceManagerRequest reg = SI__V1__REGISTER_RESOURCE_MANAGER_REQUEST__INIT;
    reg.rmid = "bad-rm";
    reg.policygroup = "bad";
    packed p = pack_msg(&reg.base);
    sicore_callbacks cb = callbacks_for(rb);
    sicore_buffer resp = {NULL, 0};
    expect_fail(sicore_register_resource_manager(s2, p.data, p.len, &cb, &resp, &err), SICORE_REJECTED, &err,
                "register(policy group with invalid YAML)");
    CHECK(resp.data == NULL && resp.len == 0, "rejected register filled response_out");
    sicore_buffer_free(resp);
    free(p.data);
    /* The library owns user_data once callbacks is non-NULL: a failed
     * registration releases it right away (include/sicore.h). */
    pthread_mutex_lock(&rb->mu);
    CHECK(rb->release_calls == 1, "rejected register: release called %d times before sicore_free, want 1",
          rb->release_calls);
    pthread_mutex_unlock(&rb->mu);

    /* The RM is not registered after the rejection. */
    Si__V1__NodeRequest nr = SI__V1__NODE_REQUEST__INIT;
    nr.rmid = "bad-rm";
    packed pn = pack_msg(&nr.base);
    expect_fail(sicore_update_node(s2, pn.data, pn.len, &err), SICORE_REJECTED, &err,
                "update_node(rm whose register was rejected)");
    free(pn.data);

    /* The first scheduler is untouched. */
    still_allocates(s, r, "a rejected configuration elsewhere");

    /* The second scheduler still registers a good policy group; a
     * re-registration releases the replaced table once. */
    recorder *ro1 = recorder_new("ok-rm#1"), *ro2 = recorder_new("ok-rm#2");
    reg.rmid = "ok-rm";
    reg.policygroup = "queues";
    p = pack_msg(&reg.base);
    cb = callbacks_for(ro1);
    expect_ok(sicore_register_resource_manager(s2, p.data, p.len, &cb, NULL, &err), &err,
              "register ok-rm on the second scheduler");
    cb = callbacks_for(ro2);
    expect_ok(sicore_register_resource_manager(s2, p.data, p.len, &cb, NULL, &err), &err,
              "re-register ok-rm with a new table");
    free(p.data);
    int one = 1;
    wait_for(ro1, p_release, &one, "release of the replaced table");

    sicore_free(s2);
    pthread_mutex_lock(&ro1->mu);
    CHECK(ro1->release_calls == 1, "replaced table: release called %d times, want 1", ro1->release_calls);
    pthread_mutex_unlock(&ro1->mu);
    pthread_mutex_lock(&ro2->mu);
    CHECK(ro2->release_calls == 1, "second table: release called %d times after sicore_free, want 1",
          ro2->release_calls);
    pthread_mutex_unlock(&ro2->mu);
    recorder_free(ro1);
    recorder_free(ro2);
    pthread_mutex_lock(&rb->mu);
    rb->freed = true;
    CHECK(rb->release_calls == 1, "rejected table: release called %d times in total, want 1", rb->release_calls);
    CHECK(rb->callbacks_total == 0, "rejected table: %d callbacks ran", rb->callbacks_total);
    pthread_mutex_unlock(&rb->mu);
    recorder_free(rb);
}

static void remove_app(sicore_scheduler *s, recorder *r) {
    printf("remove application\n");
    Si__V1__RemoveApplicationRequest rm = SI__V1__REMOVE_APPLICATION_REQUEST__INIT;
    rm.applicationid = "app-1";
    rm.partitionname = "default";
    Si__V1__RemoveApplicationRequest *rms[1] = {&rm};
    Si__V1__ApplicationRequest req = SI__V1__APPLICATION_REQUEST__INIT;
    req.n_remove = 1;
    req.remove = rms;
    req.rmid = "c-rm";
    packed p = pack_msg(&req.base);
    sicore_buffer err = {NULL, 0};
    expect_ok(sicore_update_application(s, p.data, p.len, &err), &err, "update_application(remove)");
    free(p.data);
    wait_for(r, p_all_released, NULL, "every remaining allocation released");
    pthread_mutex_lock(&r->mu);
    int n = r->n_allocs;
    for (int i = 0; i < n; i++)
        CHECK(r->allocs[i].released, "allocation %d (%s) not released after removing app-1", i, r->allocs[i].uuid);
    CHECK(r->released_unknown == 0, "%d released UUIDs were never allocated", r->released_unknown);
    printf("  %d allocations made, all released\n", n);
    pthread_mutex_unlock(&r->mu);
}

static void teardown(sicore_scheduler *s, recorder *r) {
    printf("sicore_free\n");
    sicore_free(s);
    pthread_mutex_lock(&r->mu);
    r->freed = true;
    int releases = r->release_calls;
    pthread_mutex_unlock(&r->mu);
    CHECK(releases == 1, "release called %d times by the time sicore_free returned, want 1", releases);

    /* Give any stray library thread a chance to call back. */
    struct timespec pause = {0, 300 * 1000 * 1000};
    nanosleep(&pause, NULL);
    pthread_mutex_lock(&r->mu);
    CHECK(r->late_calls == 0, "%d callbacks ran after sicore_free returned", r->late_calls);
    CHECK(r->release_calls == 1, "release called %d times in total, want 1", r->release_calls);
    CHECK(r->decode_failures == 0, "%d callback messages did not decode", r->decode_failures);
    CHECK(r->rejected_asks == 0, "%d asks were rejected", r->rejected_asks);
    printf("  callbacks: %d total, %d predicates, %d assumed, %d forgotten, %d event batches (%d events), "
           "%d scheduling-state, %d config\n",
           r->callbacks_total, r->predicates_calls, r->n_assumed, r->n_forgot, r->event_batches, r->events,
           r->sched_state_calls, r->config_calls);
    pthread_mutex_unlock(&r->mu);
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    sicore_set_logger(log_fn, NULL, SICORE_LOG_INFO);

    test_header_cxx();
    test_status_str();
    test_new_bad_options();

    recorder *r = recorder_new("c-rm");
    sicore_scheduler *s = register_rm(r);
    if (!s) {
        printf("%d passed, %d failed\n", g_passed, g_failed);
        return 1;
    }
    add_nodes(s, r);
    check_reentrancy(r);
    add_app(s, r);
    allocate_three(s, r);
    release_one(s, r);
    state_dump(s);
    bad_inputs(s, r);
    bad_config(s, r);
    remove_app(s, r);
    teardown(s, r);
    recorder_free(r);

    sicore_set_logger(NULL, NULL, SICORE_LOG_OFF);
    printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed == 0 ? 0 : 1;
}
