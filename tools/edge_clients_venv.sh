#!/usr/bin/env bash
# Creates .venv-edge-clients from requirements-edge-clients.txt: the TFLite Task Library
# (tflite-support, with its metadata writers) and MediaPipe Tasks, in their own virtualenv because
# tflite-support pins protobuf<4. Idempotent: reinstalls only when the requirements change.
# Installs the Debian package libusb-1.0-0 (tflite-support's native library links it) when
# missing and apt-get can run. Used by `apps/export.py --metadata` and tests/export/test_runtime_clients.py.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.venv-edge-clients
has_libusb() { ldconfig -p 2>/dev/null | grep -q 'libusb-1\.0\.so\.0' || compgen -G '/usr/lib/*/libusb-1.0.so.0' >/dev/null; }
if ! has_libusb; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo -n"
    echo "[edge clients] installing libusb-1.0-0 (Debian)" >&2
    { $sudo apt-get update -qq && $sudo apt-get install -y -qq libusb-1.0-0; } >/dev/null \
        || { echo "[edge clients] could not install libusb-1.0-0: tflite-support will not import" >&2; exit 1; }
fi
[ -x $venv/bin/python ] || "${PYTHON:-python3}" -m venv $venv
stamp=$venv/.kbert-requirements
wanted="$(sha256sum < requirements-edge-clients.txt)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]; then
    echo "[edge clients] installing requirements-edge-clients.txt into $venv" >&2
    $venv/bin/python -m pip install --quiet -r requirements-edge-clients.txt
    echo "$wanted" > "$stamp"
fi
$venv/bin/python -c "import tflite_support.task.text, mediapipe.tasks.python.text" \
    || { echo "[edge clients] $venv does not import tflite_support and mediapipe" >&2; exit 1; }
