#!/bin/sh
# hyperpod-nccl node_health: read-only checks of one GPU node (EKS or Slurm worker).
# Nothing here changes the node: no restarts, no resets, no `dcgmi diag`, no writes outside stdout.
# Every external command runs under `timeout`; a missing tool prints "not installed: <tool>" and
# the script carries on. Sections are delimited by catalog.SECTION_MARKER for the parser.
# Parameter (environment, validated by the catalogue): PROBE_CMD_TIMEOUT seconds per command
# (default 10: a healthy node answers each in well under a second; a hung GPU must not eat the
# whole 180 s session budget).

PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/opt/amazon/efa/bin:/usr/local/cuda/bin:$PATH
LC_ALL=C
export PATH LC_ALL
T=${PROBE_CMD_TIMEOUT:-10}
case $T in '' | *[!0-9]*) T=10 ;; esac

section() { printf '===== hyperpod-nccl:section %s =====\n' "$1"; }
have() { command -v "$1" >/dev/null 2>&1; }
missing() { printf 'not installed: %s\n' "$1"; }

# run CMD ARGS...: one bounded command, stderr folded in so a failure explains itself.
run() {
    if have "$1"; then timeout -k 2 "$T" "$@" 2>&1; else missing "$1"; fi
}

# priv CMD ARGS...: root-only reads (kernel log, iptables). `sudo -n` never prompts: without
# passwordless sudo the command runs as is and its "permission denied" is the evidence.
priv() {
    if ! have "$1"; then missing "$1"; return; fi
    if [ "$(id -u)" != 0 ] && have sudo && timeout -k 2 "$T" sudo -n true >/dev/null 2>&1; then
        timeout -k 2 "$T" sudo -n "$@" 2>&1
    else
        timeout -k 2 "$T" "$@" 2>&1
    fi
}

# show FILE...: readable files, each prefixed with its name.
show() {
    for f in "$@"; do
        [ -r "$f" ] && printf '##### file %s\n' "$f" && timeout -k 2 "$T" cat "$f" 2>&1
    done
    return 0
}

section host
printf 'hostname: %s\n' "$(timeout -k 2 "$T" hostname 2>/dev/null)"
# On Nitro instances the DMI asset tag is the instance id and product_name the instance type.
printf 'instance_id: %s\n' "$(timeout -k 2 "$T" cat /sys/devices/virtual/dmi/id/board_asset_tag 2>/dev/null)"
printf 'instance_type: %s\n' "$(timeout -k 2 "$T" cat /sys/devices/virtual/dmi/id/product_name 2>/dev/null)"
printf 'kernel: %s\n' "$(timeout -k 2 "$T" uname -r 2>/dev/null)"
printf 'user: %s\n' "$(timeout -k 2 "$T" id -un 2>/dev/null)"
printf 'uptime: %s\n' "$(timeout -k 2 "$T" cat /proc/uptime 2>/dev/null)"
printf 'command_timeout_s: %s\n' "$T"

section driver
if [ -r /proc/driver/nvidia/version ]; then
    timeout -k 2 "$T" cat /proc/driver/nvidia/version 2>&1
else
    printf 'not installed: nvidia driver (/proc/driver/nvidia/version absent)\n'
fi

section nvidia_smi_q
# Health fields only: ECC, retired pages, row remapping, clock-event reasons, PCIe link, fabric.
run nvidia-smi -q

section nvlink
run nvidia-smi nvlink -s

section kernel_log
# The kernel ring buffer, or the journal's kernel messages for this boot, filtered to the
# patterns that matter for NCCL and capped so a noisy node cannot flood the report.
PATTERNS='NVRM: Xid|SXid|fallen off the bus|invoked oom-killer|Out of memory|Killed process|AER:|PCIe Bus Error|LnkSta|downgraded|limited by|Link [Dd]own|Link [Uu]p|Link DOWN|Link UP|efa_|infiniband efa'
if have dmesg && priv dmesg -T >/dev/null 2>&1; then
    priv dmesg -T | timeout -k 2 "$T" grep -E "$PATTERNS" | timeout -k 2 "$T" tail -n 300
elif have journalctl; then
    priv journalctl -k -b --no-pager -q | timeout -k 2 "$T" grep -E "$PATTERNS" | timeout -k 2 "$T" tail -n 300
else
    priv dmesg -T
fi

section pcie
# Link status of NVIDIA GPUs/NVSwitches (10de) and EFA devices (1d0f): "(downgraded)" marks a
# link that trained below its capability.
if have lspci; then
    for vendor in 10de 1d0f; do
        priv lspci -d "$vendor:" -vv | timeout -k 2 "$T" grep -E '^[0-9a-f]|LnkCap:|LnkSta:'
    done
else
    missing lspci
fi

section fabric_manager
if have systemctl; then
    printf 'active: %s\n' "$(timeout -k 2 "$T" systemctl is-active nvidia-fabricmanager 2>/dev/null)"
    timeout -k 2 "$T" systemctl show -p LoadState,ActiveState,SubState,Result nvidia-fabricmanager 2>&1
else
    missing systemctl
fi
run nv-fabricmanager --version

section dcgm_health
# Health watches only (`-c` checks what DCGM has already seen); never a diag that loads the GPUs.
run dcgmi health -c

section efa_fi_info
run fi_info -p efa -t FI_EP_RDM

section efa_devices
# One line per RDMA device with its kernel driver: EFA devices are named rdmapNsM (efa_N on
# older kernels), so the driver, not the name, says which are EFA.
if [ -d /sys/class/infiniband ]; then
    for dev in /sys/class/infiniband/*; do
        [ -e "$dev" ] || continue
        driver=$(timeout -k 2 "$T" readlink "$dev/device/driver" 2>/dev/null)
        printf '%s driver=%s\n' "${dev##*/}" "${driver##*/}"
    done
else
    printf 'no /sys/class/infiniband\n'
fi

section efa_versions
run fi_info --version
show /opt/amazon/efa_installed_packages
for lib in /opt/amazon/ofi-nccl/lib/libnccl-net*.so* /opt/amazon/ofi-nccl/lib64/libnccl-net*.so* \
    /opt/aws-ofi-nccl/lib/libnccl-net*.so* /usr/local/lib/libnccl-net*.so*; do
    [ -e "$lib" ] && printf 'ofi_nccl_lib: %s\n' "$lib"
done
show /opt/amazon/ofi-nccl/VERSION /opt/aws-ofi-nccl/VERSION

section nccl
# NCCL libraries the host provides (containers may bring their own; the log triage sees those).
if have ldconfig; then
    timeout -k 2 "$T" ldconfig -p 2>/dev/null | timeout -k 2 "$T" grep -E 'libnccl\.so'
fi
for lib in /usr/lib/x86_64-linux-gnu/libnccl.so.* /usr/lib64/libnccl.so.* /usr/local/lib/libnccl.so.* \
    /opt/nccl/build/lib/libnccl.so.* /usr/local/cuda/lib64/libnccl.so.*; do
    [ -e "$lib" ] && printf 'nccl_lib: %s\n' "$lib"
done
true

section mtu
if have ip; then
    run ip -o link show
else
    for dev in /sys/class/net/*; do
        printf '%s mtu %s\n' "${dev##*/}" "$(timeout -k 2 "$T" cat "$dev/mtu" 2>/dev/null)"
    done
fi

section shm
run df -P -k /dev/shm

section limits
printf 'shell memlock: %s\n' "$(timeout -k 2 "$T" sh -c 'ulimit -l' 2>&1)"
printf 'shell stack: %s\n' "$(timeout -k 2 "$T" sh -c 'ulimit -s' 2>&1)"
# Jobs inherit the limits of the daemon that starts them, not the login shell's.
for daemon in slurmd containerd dockerd; do
    pid=$(timeout -k 2 "$T" pgrep -xo "$daemon" 2>/dev/null)
    [ -n "$pid" ] && timeout -k 2 "$T" grep -E 'Max locked memory|Max stack size' "/proc/$pid/limits" 2>/dev/null |
        timeout -k 2 "$T" sed "s/^/$daemon /"
done
if [ -r /etc/security/limits.conf ]; then
    timeout -k 2 "$T" grep -hE '^[^#].*(memlock|stack)' /etc/security/limits.conf /etc/security/limits.d/*.conf 2>/dev/null
fi
true

section remove_ipc
show /etc/systemd/logind.conf /etc/systemd/logind.conf.d/*.conf | timeout -k 2 "$T" grep -E '^##### file|RemoveIPC'
true

section shm_files
# NCCL segments older than an hour: left behind by a killed job, they hold /dev/shm space.
printf 'nccl files: %s\n' "$(timeout -k 2 "$T" find /dev/shm -maxdepth 1 -name 'nccl-*' 2>/dev/null | timeout -k 2 "$T" wc -l)"
timeout -k 2 "$T" find /dev/shm -maxdepth 1 -name 'nccl-*' -mmin +60 -exec ls -ln {} + 2>/dev/null |
    timeout -k 2 "$T" head -n 50
true

section firewall
if have iptables; then
    priv iptables -S | timeout -k 2 "$T" grep -E '^-P|DROP|REJECT'
elif have nft; then
    priv nft list ruleset | timeout -k 2 "$T" grep -iE 'policy drop|drop|reject'
else
    missing iptables
fi
true

section env_files
# NCCL / libfabric settings the node imposes on every job (Slurm prolog-sourced files included).
for f in /etc/nccl.conf /etc/environment /etc/profile.d/*.sh /etc/slurm/*.env /opt/slurm/etc/*.env; do
    [ -r "$f" ] && timeout -k 2 "$T" grep -HE '^[[:space:]]*(export[[:space:]]+)?(NCCL_|FI_|OFI_NCCL_)' "$f" 2>/dev/null
done
true

section end
