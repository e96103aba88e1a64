#!/bin/sh
# PID 1 of a Cnuas HIL test guest (instead of systemd, which costs seconds
# under TCG). Brings up just what the matrix needs: filesystems, the
# user-mode NIC for SSH, udev (module autoload, /dev/infiniband nodes) and
# sshd. Prints CNUAS-INIT-REACHED on the console first: the accelerator probe
# waits for that line.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
echo "CNUAS-INIT-REACHED $(cat /proc/uptime 2>/dev/null)" >/dev/console
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /dev/shm
mount -o remount,rw /
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t configfs configfs /sys/kernel/config 2>/dev/null

name=$(sed -n 's/.*cnuas\.hostname=\([^ ]*\).*/\1/p' /proc/cmdline)
hostname "${name:-guest}"

modprobe -a virtio_net virtio_rng 2>/dev/null
ip link set lo up
ip addr add 10.0.2.15/24 dev eth0
ip link set eth0 up
ip route add default via 10.0.2.2
echo "CNUAS-NET-UP $(cut -d" " -f1 /proc/uptime)" >/dev/console

mkdir -p /run/sshd
/usr/sbin/sshd -E /run/sshd.log
echo "CNUAS-SSHD-STARTED $(cut -d" " -f1 /proc/uptime)" >/dev/console

# udev autoloads modules for devices and creates /dev/infiniband/* with the
# rules rdma-core ships. Coldplug only PCI: a full trigger loads dozens of
# modules (kvm, pcspkr, ...) that cost seconds of a TCG vCPU and that no row
# needs; devices our drivers create later raise their own events. The
# harness runs `udevadm settle` before handing a guest to a row.
/usr/lib/systemd/systemd-udevd --daemon >/dev/null 2>&1
udevadm trigger --action=add --subsystem-match=pci >/dev/null 2>&1

# PID 1 must reap orphans and never exit.
while :; do
	wait
	sleep 1
done
