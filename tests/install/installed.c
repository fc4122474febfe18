/*
 * Built against an installed sicore with nothing but
 * `pkg-config --cflags --libs sicore` (scripts/install-test.sh): the header
 * is found as <sicore.h>, the library as -lsicore. Checks that the header's
 * version macros agree with the library's sicore_version(), then drives one
 * registration and reads it back from the state dump.
 */
#define _GNU_SOURCE /* memmem */
#include <sicore.h>

#include <stdio.h>
#include <string.h>

#define STR2(x) #x
#define STR(x) STR2(x)

int main(void) {
    const char *macro_version =
        STR(SICORE_VERSION_MAJOR) "." STR(SICORE_VERSION_MINOR) "." STR(SICORE_VERSION_PATCH);
    if (strcmp(macro_version, SICORE_VERSION_STRING) != 0) {
        fprintf(stderr, "macros %s disagree with SICORE_VERSION_STRING %s\n", macro_version,
                SICORE_VERSION_STRING);
        return 1;
    }
    if (strcmp(sicore_version(), SICORE_VERSION_STRING) != 0) {
        fprintf(stderr, "header %s, library %s\n", SICORE_VERSION_STRING, sicore_version());
        return 1;
    }

    sicore_scheduler *s = NULL;
    sicore_buffer err = {0};
    if (sicore_new(NULL, 0, &s, &err) != SICORE_OK) {
        fprintf(stderr, "sicore_new: %.*s\n", (int)err.len, (const char *)err.data);
        return 1;
    }
    /* si.v1.RegisterResourceManagerRequest{rmID: "c-rm" (1), policyGroup: "queues" (3)} */
    static const uint8_t req[] = {0x0a, 4, 'c', '-', 'r', 'm', 0x1a, 6, 'q', 'u', 'e', 'u', 'e', 's'};
    /* NULL callbacks: not implemented */
    sicore_callbacks cb = {.struct_size = sizeof cb};
    sicore_buffer resp = {0};
    if (sicore_register_resource_manager(s, req, sizeof req, &cb, &resp, &err) != SICORE_OK) {
        fprintf(stderr, "register: %.*s\n", (int)err.len, (const char *)err.data);
        return 1;
    }
    sicore_buffer_free(resp);
    sicore_buffer dump = {0};
    if (sicore_state_dump(s, &dump, &err) != SICORE_OK) {
        fprintf(stderr, "state dump: %.*s\n", (int)err.len, (const char *)err.data);
        return 1;
    }
    static const char want[] = "\"rm_id\": \"c-rm\"";
    int registered = memmem(dump.data, dump.len, want, sizeof want - 1) != NULL;
    sicore_buffer_free(dump);
    sicore_free(s);
    if (!registered) {
        fprintf(stderr, "the state dump does not list rm c-rm\n");
        return 1;
    }
    printf("sicore %s (C, installed): registered c-rm\n", sicore_version());
    return 0;
}
