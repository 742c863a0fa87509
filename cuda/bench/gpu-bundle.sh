#!/usr/bin/env bash
# make gpu-bundle: copy the third-party files the build reads (doctest, the two stb headers, the
# NanumGothic font) into .gpu-deps/ (git-ignored), for a GPU machine that cannot install Debian
# packages (one without network). Carry .gpu-deps/ there; cuda/bench/gpu-check.sh builds against
# it when it is present.
set -eu
DOCTEST_INC=${DOCTEST_INC:-/usr/include/doctest}
STB_INC=${STB_INC:-/usr/include/stb}
FONT=${FONT:-/usr/share/fonts/truetype/nanum/NanumGothic.ttf}
make --no-print-directory deps  # installs the Debian packages here if they are missing
rm -rf .gpu-deps
mkdir -p .gpu-deps/doctest .gpu-deps/stb
cp "$DOCTEST_INC/doctest.h" .gpu-deps/doctest/
cp "$STB_INC/stb_image_write.h" "$STB_INC/stb_truetype.h" .gpu-deps/stb/
cp "$FONT" .gpu-deps/NanumGothic.ttf
echo "gpu-bundle: .gpu-deps/ holds $(du -sh .gpu-deps | cut -f1): carry it to the GPU machine and run make gpu-check there"
