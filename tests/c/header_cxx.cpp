// Proves include/sicore.h is valid C++17: compiled with g++ -std=c++17
// -Wall -Wextra -Werror and linked into the C test program, which calls
// sicore_header_cxx_check() from main().
#include "sicore.h"

#include <cstddef>
#include <cstring>
#include <type_traits>

static_assert(std::is_standard_layout<sicore_buffer>::value, "sicore_buffer is a plain C struct");
static_assert(std::is_standard_layout<sicore_callbacks>::value, "sicore_callbacks is a plain C struct");
static_assert(offsetof(sicore_callbacks, struct_size) == 0, "the table starts with its size");
static_assert(SICORE_OK == 0 && SICORE_INTERNAL == 6, "status values are the contract's");
static_assert(SICORE_LOG_ERROR == 1 && SICORE_LOG_TRACE == 5, "log levels are the contract's");

extern "C" int sicore_header_cxx_check(void);

// Returns the number of failed checks (0 on success).
extern "C" int sicore_header_cxx_check(void) {
    int failed = 0;
    const char *v = sicore_version();
    if (v == nullptr || std::strlen(v) == 0) failed++;

    // Reference every type and function pointer type of the header.
    sicore_buffer buf{nullptr, 0};
    sicore_buffer_free(buf);
    sicore_callbacks cbs{};
    cbs.struct_size = sizeof cbs;
    if (std::strcmp(sicore_status_str(SICORE_REJECTED), "SICORE_REJECTED") != 0) failed++;
    sicore_status_callback st = cbs.update_allocation;
    sicore_notify_callback nt = cbs.send_event;
    sicore_answer_callback an = cbs.update_configuration;
    sicore_log_fn lf = nullptr;
    sicore_reply *reply = nullptr;
    sicore_scheduler *sched = nullptr;
    sicore_status s = SICORE_OK;
    sicore_log_level lvl = SICORE_LOG_OFF;
    if (st != nullptr || nt != nullptr || an != nullptr || lf != nullptr) failed++;
    sicore_reply_set(reply, nullptr, 0);  // NULL reply is ignored
    sicore_free(sched);                   // NULL is a no-op
    sicore_buffer err{nullptr, 0};
    s = sicore_state_dump(nullptr, &buf, &err);
    if (s != SICORE_INVALID_ARGUMENT) failed++;
    sicore_buffer_free(err);
    sicore_buffer_free(buf);
    (void)lvl;
    return failed;
}
