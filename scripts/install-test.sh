#!/usr/bin/env bash
# Installs sicore the way a user does and builds against the installed copy
# only (run by scripts/test.sh):
#   - `cargo cinstall` into a temporary prefix: soname, symlinks, static
#     library, include/sicore/sicore.h, lib/pkgconfig/sicore.pc;
#   - a C program linked dynamically and a C++17 program linked statically,
#     each with nothing but pkg-config's flags; the CMake example;
#   - the Go binding as an ordinary module (a local module proxy, no
#     `replace`) from a module outside the checkout: the simplerm example
#     with `go run`, and tests/install/gorm linked dynamically and fully
#     static;
#   - the yunikorn-core drop-in (bindings/go-v1) in its default link mode,
#     pkg-config: tests/install/gorm-v1, an RM written for yunikorn-core
#     v1.8, switched with one replace line, linked dynamically and fully
#     static.
# Needs cargo-c on PATH (`cargo install --locked cargo-c`; scripts/test.sh
# builds one into target/tools when missing), pkg-config, a C and C++
# compiler, cmake, Go.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
step() { printf '\n== %s\n' "$*"; }

work=$(mktemp -d "${TMPDIR:-/tmp}/sicore-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
# The prefixes keep one path from run to run: Go's build cache does not
# notice when pkg-config's output changes, and would link with a stale -L.
prefix=$root/target/install-test/prefix
rm -rf "$root/target/install-test"
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)
# The soname's version, cargo-c's default and scripts/abi_check.py's ABI
# version: the major, or while that is 0 the major and minor (0.0.x: all).
IFS=. read -r v_major v_minor v_patch <<< "${version%%[-+]*}"
if [ "$v_major" != 0 ]; then sover=$v_major
elif [ "$v_minor" != 0 ]; then sover=0.$v_minor
else sover=0.0.$v_patch
fi

# A target directory of its own (target/capi): cargo-c's cargo is not the
# toolchain's, so it could not reuse target/ anyway, and a build there
# would wait for cargo's lock on target/release while the Python step
# builds its wheel beside this test (scripts/test.sh).
capi_target=$root/target/capi
step "install: cargo cinstall --prefix $prefix"
cargo cinstall -p sicore --release --locked --target-dir "$capi_target" \
  --prefix="$prefix" --libdir="$prefix/lib"

# What a packager and the loader rely on.
lib=$prefix/lib
test -f "$lib/libsicore.a"
test -L "$lib/libsicore.so" && test -L "$lib/libsicore.so.$sover"
test -f "$(readlink -f "$lib/libsicore.so")"
soname=$(readelf -d "$lib/libsicore.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "libsicore.so.$sover" ] || { echo "soname is '$soname', want libsicore.so.$sover" >&2; exit 1; }
cmp "$prefix/include/sicore/sicore.h" include/sicore.h
export PKG_CONFIG_PATH=$lib/pkgconfig
[ "$(pkg-config --modversion sicore)" = "$version" ] || { echo "sicore.pc has version $(pkg-config --modversion sicore), Cargo.toml $version" >&2; exit 1; }
echo "installed libsicore $version, soname $soname; pkg-config --libs sicore: $(pkg-config --libs sicore)"

step "install: C (dynamic) and C++17 (static) against the installed library, pkg-config only"
# shellcheck disable=SC2046  # pkg-config output is a list of flags
cc -std=c11 -Wall -Wextra -Werror -pedantic -o "$work/c-dynamic" tests/install/installed.c \
  $(pkg-config --cflags --libs sicore)
LD_LIBRARY_PATH=$lib "$work/c-dynamic"
deps=$(LD_LIBRARY_PATH=$lib ldd "$work/c-dynamic")
case "$deps" in
  *"libsicore.so.$sover => $lib/"*) ;;
  *) echo "the C program does not load libsicore.so.$sover from the prefix:" >&2; echo "$deps" >&2; exit 1 ;;
esac
# A fully static binary: with -static the linker takes libsicore.a. The
# same --libs serve: what the Rust standard library needs from glibc is in
# libc.a (glibc >= 2.34), and the driver adds libgcc_eh and libm (C++).
# (`pkg-config --static` would add Libs.private, Rust's list for a static
# library inside a dynamic program, whose -lgcc_s has no static form.)
# shellcheck disable=SC2046
c++ -std=c++17 -Wall -Wextra -Werror -pedantic -static -o "$work/cxx-static" tests/install/installed.cpp \
  $(pkg-config --cflags --libs sicore) 2> "$work/cxx-link.log" \
  || { cat "$work/cxx-link.log" >&2; exit 1; }
"$work/cxx-static"
if readelf -d "$work/cxx-static" | grep NEEDED; then
  echo "the static C++ program needs the shared libraries above" >&2; exit 1
fi

step "install: CMake example (pkg_check_modules)"
cmake -S tests/install -B "$work/cmake" -DCMAKE_BUILD_TYPE=Release > "$work/cmake.log" \
  || { cat "$work/cmake.log" >&2; exit 1; }
cmake --build "$work/cmake" > "$work/cmake-build.log" || { cat "$work/cmake-build.log" >&2; exit 1; }
LD_LIBRARY_PATH=$lib "$work/cmake/sicore_cmake_example"

step "install: Go module from a local module proxy, outside the checkout"
# The module is published as github.com/sicore/sicore/bindings/go at the
# library's version (tag bindings/go/v$version). Here a file-based proxy
# serves this checkout's copy; every other module comes from the regular proxy.
modpath=github.com/sicore/sicore/bindings/go
gov=v$version
proxy=$work/goproxy
mkdir -p "$proxy/$modpath/@v"
printf '%s\n' "$gov" > "$proxy/$modpath/@v/list"
printf '{"Version":"%s","Time":"%s"}\n' "$gov" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" > "$proxy/$modpath/@v/$gov.info"
cp bindings/go/go.mod "$proxy/$modpath/@v/$gov.mod"
(cd bindings/go && git ls-files -co --exclude-standard .) | python3 -c '
import sys, zipfile
prefix, dest = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as z:
    for name in sorted(sys.stdin.read().split()):
        z.write("bindings/go/" + name, prefix + "/" + name)
' "$modpath@$gov" "$proxy/$modpath/@v/$gov.zip"
# A module cache keeps a version forever: drop an earlier run's copy of
# this one module, so the proxy's is used.
modcache=$(go env GOMODCACHE)
for d in "$modcache/$modpath@$gov" "$modcache/cache/download/$modpath/@v"; do
  if [ -e "$d" ]; then chmod -R u+w "$d" && rm -rf "$d"; fi
done
# The go command also indexes a module version's files once, in its build
# cache, for good: without this a second run on one machine builds the
# first run's file list (new files of the binding "undefined").
export GODEBUG=goindex=0

app=$work/gorm
mkdir -p "$app/simplerm"
cp tests/install/gorm/main.go "$app/"
cp bindings/go/examples/simplerm/main.go "$app/simplerm/"
cat > "$app/go.mod" <<EOF
module example.com/gorm

go 1.21

require (
	$modpath $gov
	go.uber.org/zap v1.27.0
	go.uber.org/zap/exp v0.3.0
)
EOF
upstream=$(go env GOPROXY)
export GOPROXY="file://$proxy,${upstream:-https://proxy.golang.org,direct}"
export GONOSUMDB=github.com/sicore/sicore GOFLAGS=-mod=mod
# Go's build cache keys a cgo package by its #cgo flags and CGO_* variables,
# not by pkg-config's output: naming the prefix here keeps a cached build
# made against another prefix from being reused.
export CGO_CFLAGS="-O2 -g -I$prefix/include/sicore"
(
  cd "$app"
  go mod tidy
  if grep -q replace go.mod; then echo "go.mod has a replace directive" >&2; exit 1; fi
  LD_LIBRARY_PATH=$lib go run ./simplerm
  go build -o gorm-dynamic .
  LD_LIBRARY_PATH=$lib ./gorm-dynamic
  # Fully static, as for an Alpine or distroless image: libsicore.a from
  # the same prefix, no libgcc_s.
  go build -ldflags '-linkmode external -extldflags -static' -o gorm-static . 2> link.log \
    || { cat link.log >&2; exit 1; }
  if readelf -d gorm-static | grep NEEDED; then
    echo "gorm-static needs the shared libraries above" >&2; exit 1
  fi
  ./gorm-static
)

step "install: the yunikorn-core drop-in (bindings/go-v1), one replace line, pkg-config"
# An RM written for yunikorn-core v1.8 switches to sicore with one line in
# its go.mod (the drop-in's module path is github.com/apache/yunikorn-core,
# so no proxy can serve it as that); with no build tag the binding links the
# installed libsicore through pkg-config, as bindings/go does above.
appv1=$work/gorm-v1
mkdir -p "$appv1"
cp tests/install/gorm-v1/main.go "$appv1/"
cat > "$appv1/go.mod" <<EOF
module example.com/gorm-v1

go 1.24.0

require github.com/apache/yunikorn-core v1.8.0

replace github.com/apache/yunikorn-core => $root/bindings/go-v1
EOF
(
  cd "$appv1"
  go mod tidy
  if [ "$(grep -c '^replace' go.mod)" != 1 ]; then echo "go.mod has more than the one replace line:" >&2; cat go.mod >&2; exit 1; fi
  go build -mod=readonly -o gorm-v1-dynamic .
  deps=$(LD_LIBRARY_PATH=$lib ldd gorm-v1-dynamic)
  case "$deps" in
    *"libsicore.so.$sover => $lib/"*) ;;
    *) echo "gorm-v1-dynamic does not load libsicore.so.$sover from the prefix:" >&2; echo "$deps" >&2; exit 1 ;;
  esac
  LD_LIBRARY_PATH=$lib SICORE_REST_ADDRESS=127.0.0.1:0 ./gorm-v1-dynamic
  go build -mod=readonly -ldflags '-linkmode external -extldflags -static' -o gorm-v1-static . 2> link.log \
    || { cat link.log >&2; exit 1; }
  if readelf -d gorm-v1-static | grep NEEDED; then
    echo "gorm-v1-static needs the shared libraries above" >&2; exit 1
  fi
  SICORE_REST_ADDRESS=127.0.0.1:0 ./gorm-v1-static
)

# musl (Alpine images): the static library built for the musl target, a C
# program and the Go RM linked fully static with musl-gcc. Runs when the
# rustup target and musl-gcc (Debian musl-tools) are there; scripts/test.sh
# installs both when SICORE_TEST_MUSL=1.
targets=$(rustup target list --installed 2>/dev/null || true)
if [[ $'\n'$targets$'\n' == *$'\n'x86_64-unknown-linux-musl$'\n'* ]] && command -v musl-gcc >/dev/null 2>&1; then
  step "install: musl static library, C and Go linked fully static against musl"
  mprefix=$root/target/install-test/musl
  cargo cinstall -p sicore --release --locked --target-dir "$capi_target" \
    --target x86_64-unknown-linux-musl --library-type staticlib \
    --prefix="$mprefix" --libdir="$mprefix/lib"
  export PKG_CONFIG_PATH=$mprefix/lib/pkgconfig
  # Rust's musl standard library unwinds with LLVM's libunwind, which a
  # static library cannot carry: sicore.pc names -lunwind. Alpine has it
  # as llvm-libunwind-static; here it is the copy Rust's musl target ships.
  unwind=$work/musl-unwind
  mkdir -p "$unwind"
  cp "$(rustc --print sysroot)/lib/rustlib/x86_64-unknown-linux-musl/lib/self-contained/libunwind.a" "$unwind/"
  # shellcheck disable=SC2046
  musl-gcc -std=c11 -Wall -Wextra -Werror -static -o "$work/c-musl" tests/install/installed.c \
    $(pkg-config --cflags --libs sicore) -L"$unwind"
  "$work/c-musl"
  (
    cd "$app"
    CC=musl-gcc CGO_CFLAGS="-O2 -g -I$mprefix/include/sicore" CGO_LDFLAGS="-O2 -g -L$unwind" go build -ldflags '-linkmode external -extldflags -static' -o gorm-musl . 2> link-musl.log \
      || { cat link-musl.log >&2; exit 1; }
    if readelf -d gorm-musl | grep NEEDED; then echo "gorm-musl needs the shared libraries above" >&2; exit 1; fi
    ./gorm-musl
  )
else
  echo "(musl: target x86_64-unknown-linux-musl or musl-gcc missing; set SICORE_TEST_MUSL=1 for scripts/test.sh to install them)"
fi
step "install: all checks passed"
