# Sourced by scripts/run-main and scripts/run-tests: create or refresh the project's
# virtual environment with the extras given in $VIDEO_ENV_EXTRAS, then put it on PATH.
#   VIDEO_ENV_VENV  where the venv lives (default: .venv in the repository)
#   PYTHON          interpreter to build it from (default: python3; needs 3.10+)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VIDEO_ENV_VENV:-$ROOT/.venv}"
PYTHON="${PYTHON:-python3}"
EXTRAS="${VIDEO_ENV_EXTRAS:-}"

if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
    echo "video-env needs Python 3.10 or newer; set PYTHON=/path/to/python3.x" >&2
    exit 1
fi
if [ ! -x "$VENV/bin/python" ]; then
    echo "[video-env] creating virtual environment in $VENV" >&2
    "$PYTHON" -m venv "$VENV"
fi
# Reinstall only when pyproject.toml changes or no install of it holds every extra asked
# for (the install is editable; one with more extras serves a run that asks fewer).
stamp="$VENV/.video-env-installed"
pyproject_hash="$(sha256sum < "$ROOT/pyproject.toml" | cut -c1-16)"
want="$pyproject_hash [$EXTRAS]"
_video_env_installed() {
    local line have extra asked=()
    [ -f "$stamp" ] || return 1
    IFS=', ' read -ra asked <<< "$EXTRAS"
    while IFS= read -r line; do
        [[ "$line" == "$pyproject_hash ["*"]" ]] || continue
        have="${line#"$pyproject_hash ["}"
        have=",${have%]},"
        have="${have// /}"
        for extra in "${asked[@]}"; do
            [[ "$have" == *",$extra,"* ]] || continue 2
        done
        return 0
    done < "$stamp"
    return 1
}
# pip's own lines show the progress; its notes about this machine's local wheel folders and
# the requirements already met are noise: filtered out. Once it has collected everything, pip
# installs without a word for a minute or more: a line says so.
_pip_lines() {
    local line
    while IFS= read -r line; do
        case "$line" in
            *"is ignored: it is neither a file nor a directory"* | "Requirement already satisfied"*)
                continue ;;
        esac
        printf '%s\n' "$line"
        if [[ "$line" == "Installing collected packages"* ]]; then
            echo "[video-env] pip is installing them: silent until it is done (a minute or more" \
                "the first time)"
        fi
    done
}
if ! _video_env_installed; then
    spec="$ROOT"
    [ -n "$EXTRAS" ] && spec="$ROOT[$EXTRAS]"
    echo "[video-env] installing video-env${EXTRAS:+[$EXTRAS]} into $VENV (minutes the first" \
        "time: each package pip collects and installs is listed)" >&2
    free_gb="$(df -Pk "$(dirname "$VENV")" | awk 'NR == 2 {print int($4 / 1048576)}')"
    if [ "${free_gb:-0}" -lt 10 ]; then  # torch with its CUDA libraries alone takes ~6 GB
        echo "[video-env] warning: ${free_gb} GB free beside $VENV; a venv of these extras" \
            "takes 7-8 GB" >&2
    fi
    # Checked by hand: set -e does not hold where this file is sourced inside `a && b`
    if ! "$VENV/bin/python" -m pip install --disable-pip-version-check --progress-bar off \
        -e "$spec" 2>&1 | _pip_lines >&2; then
        echo "[video-env] pip could not install video-env${EXTRAS:+[$EXTRAS]} into $VENV" \
            "(its message is above)" >&2
        return 1 2>/dev/null || exit 1
    fi
    echo "$want" >> "$stamp"
    echo "[video-env] installed video-env${EXTRAS:+[$EXTRAS]} into $VENV" >&2
fi
export PATH="$VENV/bin:$PATH"
export HF_HUB_OFFLINE="${HF_HUB_OFFLINE:-1}"
cd "$ROOT"
