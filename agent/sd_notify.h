/* SPDX-License-Identifier: MIT */
/*
 * sd_notify: the service manager's readiness protocol (Type=notify) without
 * libsystemd, whose dependency tree (libgcrypt, liblzma, libzstd, liblz4,
 * libcap: ~1 MiB resident) the agent mapped for this call alone (issue #23).
 *
 * The protocol is documented as stable for reimplementation (sd_notify(3),
 * "Notes"; systemd's "Interface Portability and Stability"): one datagram
 * with the state ("READY=1\nSTATUS=...") to the AF_UNIX socket named in
 * $NOTIFY_SOCKET, an abstract one when the name starts with '@'. Newer
 * systemd (254) also accepts vsock:CID:PORT for VMs; not supported here
 * (an agent in a VM is supervised by the guest's own systemd).
 */
#ifndef SYSOBS_SD_NOTIFY_H
#define SYSOBS_SD_NOTIFY_H

/*
 * Sends state to $NOTIFY_SOCKET. 0 when sent, and when NOTIFY_SOCKET is
 * unset or empty (not under a service manager); -EINVAL for an address this
 * cannot use, else -errno of socket()/sendto(). The variable is left set.
 */
int sd_notify_send(const char *state);

#endif
