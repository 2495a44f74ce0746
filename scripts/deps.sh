#!/bin/sh
# deps.sh: installs tpusim's build and test dependencies from Debian's packages.
# Sourced by run.sh and test.sh; does nothing when everything is already there.
pkgs="build-essential cmake pkg-config libyaml-dev libgsl-dev libopenblas-serial-dev libcmocka-dev libplplot-dev plplot-driver-cairo libopenmpi-dev openmpi-bin clang python3 python3-yaml"
missing=""
for p in $pkgs; do
	dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
	echo "installing:$missing"
	if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
	$sudo apt-get update -qq && \
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $missing >/dev/null || {
		echo "deps.sh: apt-get failed; install these by hand:$missing" >&2
		exit 1
	}
fi
