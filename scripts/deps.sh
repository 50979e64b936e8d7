#!/usr/bin/env bash
# deps.sh installs the system packages that huitian's build needs on a fresh
# Debian (or Ubuntu) machine, with apt-get. It is idempotent: when everything
# is present it installs nothing and prints nothing.
#
# Needed today:
#   - COIN-OR CLP, the LP solver behind solver/clp (EPL-2.0), found with
#     pkg-config: Debian's coinor-libclp-dev and pkg-config;
#   - a C and a C++ compiler for cgo (solver/clp has a small C++ file):
#     gcc and g++, or whatever $CC and $CXX name.
set -euo pipefail

# ---------------------------------------------------------------------------
# The planning service's real-client tests (server/, test/python/). This
# section runs first because the CLP section below exits early when CLP is
# present; it installs only what is missing and says so.
#   - curl, for Connect's JSON over plain HTTP;
#   - Debian's python3-grpcio, python3-grpc-tools and python3-protobuf, for a
#     client not written in Go (stubs are generated from the .proto at test
#     time). They install into /usr/bin/python3's dist-packages, which is the
#     interpreter the tests use (a pyenv or venv python3 earlier on PATH does
#     not see them);
#   - Debian's chromium, the headless browser that server/web's test drives
#     (with chromedp) to check the web page.
# ---------------------------------------------------------------------------
service_missing=()
command -v curl >/dev/null 2>&1 || service_missing+=(curl)
command -v chromium >/dev/null 2>&1 || service_missing+=(chromium)
if [ ! -x /usr/bin/python3 ] || ! /usr/bin/python3 -c 'import grpc' >/dev/null 2>&1; then
	service_missing+=(python3-grpcio)
fi
if [ ! -x /usr/bin/python3 ] || ! /usr/bin/python3 -c 'import grpc_tools.protoc' >/dev/null 2>&1; then
	service_missing+=(python3-grpc-tools)
fi
if [ ! -x /usr/bin/python3 ] || ! /usr/bin/python3 -c 'import google.protobuf' >/dev/null 2>&1; then
	service_missing+=(python3-protobuf)
fi
if [ "${#service_missing[@]}" -gt 0 ]; then
	if ! command -v apt-get >/dev/null 2>&1; then
		echo "deps.sh: the service tests need ${service_missing[*]} and apt-get is unavailable; install them by hand" >&2
		exit 1
	fi
	service_root=()
	if [ "$(id -u)" -ne 0 ]; then
		if ! command -v sudo >/dev/null 2>&1; then
			echo "deps.sh: installing ${service_missing[*]} needs root; run deps.sh as root or install sudo" >&2
			exit 1
		fi
		service_root=(sudo)
	fi
	echo "installing ${service_missing[*]} with apt-get (for the service's curl, Python client and web page tests)"
	"${service_root[@]}" apt-get update
	"${service_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y python3 "${service_missing[@]}"
fi
# ------------------------------------------------------------ end of service


packages=()
reasons=()
if ! { command -v pkg-config >/dev/null 2>&1 && pkg-config --exists clp; }; then
	packages+=(coinor-libclp-dev pkg-config)
	reasons+=("installing coinor-libclp-dev (COIN-OR CLP, the LP solver) with apt-get")
fi
if ! command -v "${CC:-gcc}" >/dev/null 2>&1; then
	packages+=(gcc)
	reasons+=("installing gcc (the C compiler that cgo needs) with apt-get")
fi
if ! command -v "${CXX:-g++}" >/dev/null 2>&1; then
	packages+=(g++)
	reasons+=("installing g++ (the C++ compiler for solver/clp's cgo code) with apt-get")
fi
if [ ${#packages[@]} -eq 0 ]; then
	exit 0
fi

# as_root runs its arguments as root: directly when we are root, with sudo
# otherwise; it fails with a clear message when neither is possible.
as_root() {
	if [ "$(id -u)" -eq 0 ]; then
		"$@"
	elif command -v sudo >/dev/null 2>&1; then
		sudo "$@"
	else
		echo "deps.sh: '$*' needs root; run deps.sh as root or install sudo" >&2
		exit 1
	fi
}

if ! command -v apt-get >/dev/null 2>&1; then
	echo "deps.sh: apt-get not found; install these by hand: ${packages[*]}" >&2
	exit 1
fi
for reason in "${reasons[@]}"; do
	echo "$reason"
done
as_root apt-get update
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y "${packages[@]}"

if ! pkg-config --exists clp; then
	echo "deps.sh: installed ${packages[*]}, but 'pkg-config --exists clp' still fails" >&2
	exit 1
fi
echo "deps.sh: done; COIN-OR CLP $(pkg-config --modversion clp)"
