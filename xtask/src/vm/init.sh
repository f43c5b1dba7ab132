#!/bin/busybox sh
# PID 1 of the test guest (see xtask/src/vm/). Mounts what netto and the
# tests need, loads the modules listed in /modules/order, mounts the host's
# share at the same absolute path as on the host (test binaries carry
# absolute paths to netto), runs every job under $RESULTS/jobs and powers
# off. Each job leaves `output` and `status` next to its `run` script; the
# host reads those after qemu exits.
/bin/busybox mkdir -p /sbin /usr/bin /usr/sbin
/bin/busybox --install -s /bin
export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TMPDIR=/tmp LANG=C.UTF-8
. /etc/netto-vm.conf

mkdir -p /proc /sys /dev /run /tmp /root /etc
# tmux, which the tests run `netto top` in, looks root up.
echo 'root:x:0:0:root:/root:/bin/sh' >/etc/passwd
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /dev/pts
mount -t devpts devpts /dev/pts
mount -t tmpfs tmp /tmp
mount -t tmpfs run /run
mount -t bpf bpf /sys/fs/bpf
mount -t tracefs tracefs /sys/kernel/tracing
mount -t debugfs debugfs /sys/kernel/debug

for module in $(cat /modules/order); do
    insmod "/modules/$module" || echo "netto-vm: insmod $module failed"
done

mkdir -p "$SHARE"
if ! mount -t 9p -o trans=virtio,version=9p2000.L,msize=1048576 share "$SHARE"; then
    echo "netto-vm: cannot mount the host share at $SHARE"
    poweroff -f
fi
ip link set lo up
# For the host: the kernel's symbols, to name where the vCPUs are if the
# guest hangs, and a heartbeat that stops when the guest's user space can
# no longer run (a job's own timeout then never fires either). `started`
# marks a job begun: one still without `status` well past its timeout could
# not be ended (its process stuck in the kernel) while the heartbeat beats.
cat /proc/kallsyms >"$RESULTS/kallsyms"
(while :; do date +%s >"$RESULTS/heartbeat"; sleep 5; done) &

echo "netto-vm: kernel $(uname -r), running jobs"
for job in "$RESULTS"/jobs/*/; do
    name=$(basename "$job")
    echo "netto-vm: job $name"
    start=$(date +%s)
    : >"$job/started"
    timeout "$(cat "$job/timeout")" sh "$job/run" >"$job/output" 2>&1
    echo $? >"$job/status"
    echo $(($(date +%s) - start)) >"$job/seconds"
    echo "netto-vm: job $name exit $(cat "$job/status") after $(cat "$job/seconds") s"
done
sync
echo "netto-vm: done"
poweroff -f
