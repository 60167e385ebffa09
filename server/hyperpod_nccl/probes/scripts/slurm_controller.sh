#!/bin/sh
# Read-only view of a Slurm cluster from its controller (or a login node).
# Every command only reads: no scontrol update, no scancel, no service restarts.
# Parameter (environment, validated by the catalogue to [A-Za-z0-9_.,:/=+@-]):
#   JOB_ID  optional Slurm job id to inspect in detail (e.g. 1234 or 1234_5).
# Output: sections delimited by catalog.SECTION_MARKER; each ends with "##### exit <status>"
# so the parser can tell "the command failed" from "the command printed nothing".

LIMIT=15
SKIPPED='skipped: slurmctld did not answer scontrol ping'

section() {
    printf '===== hyperpod-nccl:section %s =====\n' "$1"
}

# run SECTION COMMAND [ARGS...]: one read-only command under a time limit, stderr included.
run() {
    name=$1
    shift
    section "$name"
    if ! command -v "$1" >/dev/null 2>&1; then
        printf '%s: command not found\n##### exit 127\n' "$1"
        return
    fi
    timeout "$LIMIT" "$@" 2>&1
    status=$?
    printf '##### exit %s\n' "$status"
    return "$status"
}

skip() {
    section "$1"
    printf '%s\n##### exit 3\n' "$SKIPPED"
}

# grep_file PATTERN FILE: the matching lines of one config file, numbered, if it is readable.
grep_file() {
    [ -r "$2" ] || return 0
    printf '##### file %s\n' "$2"
    timeout "$LIMIT" grep -nE "$1" "$2" 2>/dev/null
}

# Defence in depth: the callers validate JOB_ID already; anything but a job id is dropped here.
case "${JOB_ID:-}" in
*[!0-9_]*) JOB_ID= ;;
esac

SETTINGS='RemoveIPC|memlock|MEMLOCK|ulimit|NCCL_|FI_|OFI_|FI_EFA|LD_LIBRARY_PATH|PropagateResourceLimits'

run version scontrol --version
section ping
PING=$(timeout "$LIMIT" scontrol ping 2>&1)
printf '%s\n##### exit %s\n' "$PING" "$?"
# Every command below asks slurmctld; with it down each would wait out its time limit, so the
# sections are marked skipped instead and the probe still finishes in seconds.
CONTROLLER_SECTIONS='sinfo sinfo_reasons nodes squeue config'
[ -n "${JOB_ID:-}" ] && CONTROLLER_SECTIONS="$CONTROLLER_SECTIONS job batch_script sacct"
CONFIG=
if printf '%s\n' "$PING" | grep -q '(primary) at .* is UP'; then
    run sinfo sinfo -N -h -o '%N|%P|%t|%T|%E'
    run sinfo_reasons sinfo -R
    run nodes scontrol -o show node
    run squeue squeue -h -t all -o '%i|%T|%r|%D|%N|%l|%M|%P|%u|%j'
    section config
    CONFIG=$(timeout "$LIMIT" scontrol show config 2>&1)
    printf '%s\n##### exit %s\n' "$CONFIG" "$?"
    if [ -n "${JOB_ID:-}" ]; then
        run job scontrol show job -d "$JOB_ID"
        run batch_script scontrol write batch_script "$JOB_ID" -
        run sacct sacct -j "$JOB_ID" -P -n -o JobID,JobName,State,ExitCode,Elapsed,Timelimit,NodeList,Reason
    fi
else
    for name in $CONTROLLER_SECTIONS; do skip "$name"; done
fi

section munge
# The socket slurm.conf names (AuthInfo=socket=...), else munge's default. The file is read too,
# for when slurmctld is down and `scontrol show config` printed nothing.
MUNGE_SOCKET=$({ printf '%s\n' "$CONFIG"; cat "${SLURM_CONF:-/etc/slurm/slurm.conf}" 2>/dev/null; } |
    sed -n 's/^AuthInfo *= *.*socket=\([^,]*\).*/\1/p' | head -n 1)
if command -v munge >/dev/null 2>&1 && command -v unmunge >/dev/null 2>&1; then
    # Encode and decode an empty credential: proves munged answers, changes nothing. The socket
    # path travels as a positional argument, never as shell text.
    timeout "$LIMIT" sh -c 'munge -n ${1:+--socket "$1"} | unmunge ${1:+--socket "$1"}' sh "$MUNGE_SOCKET" 2>&1
    printf '##### exit %s\n' "$?"
else
    printf 'munge: command not found\n##### exit 127\n'
fi

section host_files
# Prolog/epilog scripts named in slurm.conf, then the host files that set IPC, memlock and NCCL env.
for key in Prolog Epilog TaskProlog TaskEpilog PrologSlurmctld EpilogSlurmctld; do
    printf '%s\n' "$CONFIG" |
        sed -n "s/^$key *= *\\(\\/[^ ]*\\).*/\\1/p" | tr ',' '\n' |
        while read -r path; do grep_file "$SETTINGS" "$path"; done
done
for path in "${SLURM_CONF:-/etc/slurm/slurm.conf}" /opt/slurm/etc/slurm.conf /etc/systemd/logind.conf /etc/systemd/logind.conf.d/*.conf \
    /etc/security/limits.conf /etc/security/limits.d/*.conf \
    /etc/default/slurmd /etc/sysconfig/slurmd \
    /etc/systemd/system/slurmd.service.d/*.conf /etc/systemd/system/slurmd.service \
    /lib/systemd/system/slurmd.service /usr/lib/systemd/system/slurmd.service \
    /etc/profile.d/*.sh /etc/environment; do
    grep_file "$SETTINGS" "$path"
done
printf '##### exit 0\n'
