#!/bin/sh
# Slim Guard's venv for the appliance image (run in the Dockerfile's build stage).
#
# What goes, and why it is safe (docs/DEPLOY.md lists what remains):
# - pip, setuptools, wheel: nothing installs into the image at run time;
# - dependencies' tests, C/C++/Cython sources and headers: never imported;
# - kubernetes/aio: an asyncio copy of the client; Guard uses the synchronous one;
# - pyarrow's Flight and S3 libraries: nothing loads them (LanceDB reads through its own Rust
#   object store; pyarrow.fs imports them only if present);
# - extra copies of versioned shared objects (a wheel cannot hold symlinks);
# - numpy's f2py and distutils (build tools) and type stubs (*.pyi) of every package;
# - pycryptodome's SelfTest (its own test suite, 4.7 MB; matrix-nio needs the library only);
# - the sources of the kubernetes client (34 MB of generated models): it ships compiled only,
#   so a traceback inside it shows no source lines;
# - symbols of shared objects (strip --strip-unneeded), when `strip` is there.
set -eu
VENV=${1:-/opt/guard}
SITE=$(echo "$VENV"/lib/python3*/site-packages)

"$VENV/bin/python" -m pip uninstall -q -y pip setuptools wheel 2>/dev/null || true
rm -rf "$VENV"/bin/pip* "$SITE"/pip "$SITE"/setuptools "$SITE"/pkg_resources "$SITE"/_distutils_hack \
  "$SITE"/distutils-precedence.pth

find "$SITE" -depth -type d \( -name tests -o -name test \) -prune -exec rm -rf {} +
find "$SITE" -type f \( -name '*.pyx' -o -name '*.pxd' -o -name '*.pxi' -o -name '*.h' \
  -o -name '*.hpp' -o -name '*.cc' -o -name '*.cpp' -o -name '*.c' \) -delete
rm -rf "$SITE"/kubernetes/aio "$SITE"/pyarrow/include "$SITE"/pyarrow/src "$SITE"/numpy/f2py \
  "$SITE"/numpy/distutils "$SITE"/numpy/_pyinstaller "$SITE"/Crypto/SelfTest
find "$SITE" -name '*.pyi' -delete
rm -f "$SITE"/pyarrow/libarrow_flight.so* "$SITE"/pyarrow/_flight.*.so \
  "$SITE"/pyarrow/libarrow_python_flight.so* "$SITE"/pyarrow/libarrow_s3.so* \
  "$SITE"/pyarrow/_s3fs.*.so "$SITE"/pyarrow/_pyarrow_cpp_tests.*.so \
  "$SITE"/numpy/_core/_*_tests.*.so
# libfoo.so and libfoo.so.X.Y.Z are copies of libfoo.so.X, the name the others link to.
for lib in "$SITE"/pyarrow/libarrow_python*.so; do
  rm -f "$lib" "$lib".*.*.*
done

if command -v strip >/dev/null 2>&1; then
  # not the libraries auditwheel vendored (numpy.libs/, pillow.libs/): patchelf moved their
  # segments, and strip leaves them unloadable
  find "$SITE" -name '*.libs' -prune -o -name '*.so*' -type f \
    -exec strip --strip-unneeded {} + 2>/dev/null || true
else
  echo "slim.sh: no strip here, shared objects keep their symbols" >&2
fi
find "$VENV" -name '__pycache__' -prune -exec rm -rf {} +
"$VENV/bin/python" -m compileall -q -b "$SITE"/kubernetes  # .pyc beside each module
find "$SITE"/kubernetes -name '*.py' -delete
du -sm "$VENV" >&2
