"""node_health.sh keeps its promises, checked on the text itself: only reads, every external
command bounded by `timeout`, sections in the marker the parser splits on, and every section the
parser reads is one the script prints."""

from __future__ import annotations

import itertools
import re
import shlex

from hyperpod_nccl.probes.catalog import SCRIPTS_DIR, SECTION_MARKER

SCRIPT = (SCRIPTS_DIR / "node_health.sh").read_text(encoding="utf-8")
# Shell builtins, keywords and the script's own helpers (which wrap `timeout` themselves).
ALLOWED_FIRST_WORDS = {
    "timeout", "run", "priv", "show", "section", "have", "missing", "printf", "command", "true",
    "return", "continue", "for", "case", "esac", "do", "done", "if", "then", "else", "elif", "fi",
    "[", "{", "}", "export", "local", "!", "while",
}  # fmt: skip
FORBIDDEN = re.compile(
    r"\b(reboot|shutdown|rm|mv|cp|kill|pkill|modprobe|rmmod|insmod|tee|dd|mkfs|mount|umount|scontrol|"
    r"restart|start|stop|enable|disable)\b"
    r"|dcgmi diag|nvidia-smi -r|--gpu-reset|sysctl -w|ip link set|iptables -[ADIF]"
)


def commands(script: str = SCRIPT) -> list[list[str]]:
    """The script's logical lines (continuations joined) as quote-aware shell tokens."""
    logical, pending = [], ""
    for line in script.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        pending += " " + line.strip()
        if pending.endswith(("|", "\\", "&&")):
            pending = pending.rstrip("\\")
            continue
        logical.append(pending.strip())
        pending = ""
    tokenized = []
    for line in logical:
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        tokenized.append(list(lexer))
    return tokenized


SEPARATORS = {"|", "||", "&&", ";", ";;", "(", "()", "then", "do", "else", "elif", "if", "!", "while", "{"}


def command_words(tokens: list[str]) -> list[str]:
    """Words in command position: first of the line and after every separator or keyword."""
    if tokens[0] == "case":  # patterns, not commands
        return []
    words = [tokens[0]]
    words += [after for before, after in itertools.pairwise(tokens) if before in SEPARATORS]
    return [w for w in words if w not in SEPARATORS and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", w)]


def test_the_section_helper_prints_the_catalog_marker() -> None:
    marker = SECTION_MARKER.replace("{name}", "%s")
    assert f"section() {{ printf '{marker}\\n' \"$1\"; }}" in SCRIPT


def unbounded(script: str) -> list[str]:
    return [
        f"{word}: {' '.join(tokens)}"
        for tokens in commands(script)
        for word in command_words(tokens)
        if word not in ALLOWED_FIRST_WORDS and not word.endswith("()")
    ]


def test_every_external_command_runs_under_timeout_or_a_wrapper_that_adds_it() -> None:
    assert not unbounded(SCRIPT), "\n".join(unbounded(SCRIPT))


def test_the_checks_catch_what_they_look_for() -> None:
    assert FORBIDDEN.search("systemctl restart nvidia-fabricmanager") and FORBIDDEN.search("dcgmi diag -r 1")
    assert unbounded("nvidia-smi -q") and unbounded("x=$(cat /proc/uptime)") and unbounded("run ls | sort")
    assert not unbounded("run ls | timeout 5 sort")


def test_the_script_only_reads() -> None:
    offending = [" ".join(tokens) for tokens in commands() if FORBIDDEN.search(" ".join(tokens))]
    assert not offending, "\n".join(offending)
    targets = {
        tokens[i + 1] for tokens in commands() for i, token in enumerate(tokens[:-1]) if token in (">", ">>")
    }
    assert targets <= {"/dev/null"}, targets


def test_every_section_the_parser_reads_is_printed() -> None:
    printed = set(re.findall(r"^section (\w+)$", SCRIPT, re.MULTILINE))
    read = {"host", "driver", "nvidia_smi_q", "nvlink", "kernel_log", "pcie", "fabric_manager", "dcgm_health"}
    read |= {"efa_fi_info", "efa_devices", "efa_versions", "nccl", "mtu", "shm", "limits", "remove_ipc"}
    read |= {"shm_files", "firewall", "env_files", "end"}
    assert read <= printed
