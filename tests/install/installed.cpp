// The C++17 side of scripts/install-test.sh: the installed header compiles
// cleanly as C++ (-Wall -Wextra -Werror -pedantic), and the program links
// libsicore statically through `pkg-config --static --cflags --libs sicore`.
#include <sicore.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

namespace {

struct SchedulerDeleter {
    void operator()(sicore_scheduler *s) const noexcept { sicore_free(s); }
};
using Scheduler = std::unique_ptr<sicore_scheduler, SchedulerDeleter>;

std::string take(sicore_buffer &b) {
    std::string out(reinterpret_cast<const char *>(b.data), b.len);
    sicore_buffer_free(b);
    b = sicore_buffer{};
    return out;
}

}  // namespace

int main() {
    static_assert(SICORE_VERSION_MAJOR >= 0 && SICORE_VERSION_MINOR >= 0 && SICORE_VERSION_PATCH >= 0);
    if (std::string_view(sicore_version()) != SICORE_VERSION_STRING) {
        std::fprintf(stderr, "header %s, library %s\n", SICORE_VERSION_STRING, sicore_version());
        return 1;
    }
    sicore_scheduler *raw = nullptr;
    sicore_buffer err{};
    if (sicore_new(nullptr, 0, &raw, &err) != SICORE_OK) {
        std::fprintf(stderr, "sicore_new: %s\n", take(err).c_str());
        return 1;
    }
    Scheduler s(raw);
    // si.v1.RegisterResourceManagerRequest{rmID: "cxx-rm" (1), policyGroup: "queues" (3)}
    const std::string req = std::string("\x0a\x06") + "cxx-rm" + "\x1a\x06" + "queues";
    sicore_callbacks cb{};  // null callbacks: not implemented
    cb.struct_size = sizeof cb;
    sicore_buffer resp{};
    if (sicore_register_resource_manager(s.get(), reinterpret_cast<const uint8_t *>(req.data()),
                                         req.size(), &cb, &resp, &err) != SICORE_OK) {
        std::fprintf(stderr, "register: %s\n", take(err).c_str());
        return 1;
    }
    take(resp);
    // A bad request is refused with a message and changes nothing.
    const uint8_t garbage[] = {0xff, 0xff, 0xff};
    if (sicore_register_resource_manager(s.get(), garbage, sizeof garbage, &cb, nullptr, &err) ==
        SICORE_OK) {
        std::fprintf(stderr, "garbage registration accepted\n");
        return 1;
    }
    const std::string reason = take(err);
    sicore_buffer dump{};
    if (sicore_state_dump(s.get(), &dump, &err) != SICORE_OK) {
        std::fprintf(stderr, "state dump: %s\n", take(err).c_str());
        return 1;
    }
    if (take(dump).find("\"rm_id\": \"cxx-rm\"") == std::string::npos) {
        std::fprintf(stderr, "the state dump does not list rm cxx-rm\n");
        return 1;
    }
    std::printf("sicore %s (C++17, static): registered cxx-rm; garbage refused: %s\n", sicore_version(),
                reason.c_str());
    return 0;
}
