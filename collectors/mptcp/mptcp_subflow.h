/* SPDX-License-Identifier: MIT */
/*
 * Subflow health, the collector's side (mptcp_subflow.c): at each
 * reconciliation, the dump's tcp_info/mptcp_info into the live state, the
 * subflow metrics (srtt histogram by netns; bytes acked/received and
 * retransmits by netns and local endpoint id) and, every subflow_history,
 * one mptcp_subflow_samples row per subflow that lived that long; on
 * demand (?refresh=1), a dump of its own from an HTTP thread.
 */
#ifndef SYSOBS_MPTCP_SUBFLOW_H
#define SYSOBS_MPTCP_SUBFLOW_H

#include <stdint.h>

struct mptcp_priv;
struct mptcp_watch;
struct mptcp_state;

/* Allocates p->sub; history_ms 0: no history rows. 0 or -ENOMEM. */
int mptcp_subflow_init(struct mptcp_priv *p, uint64_t history_ms);
/* Closes what p->sub holds and frees it (NULL accepted). */
void mptcp_subflow_free(struct mptcp_priv *p);
/* Opens w's on-demand sock_diag socket; in w's netns (mptcp_in_netns()). */
void mptcp_subflow_open_here(struct mptcp_priv *p, struct mptcp_watch *w);
/* Closes it (w lets go of its namespace), waiting for a dump on it. */
void mptcp_subflow_close(struct mptcp_priv *p, struct mptcp_watch *w);
/* Main thread, after a reconciliation's dump fresh of w taken at now_ns. */
void mptcp_subflow_sample(struct mptcp_priv *p, struct mptcp_watch *w,
			  const struct mptcp_state *fresh, int64_t now_ns);
/* Any thread: a dump of every watched netns (or netns alone) now, into the
 * live state's figures (not the metrics). 0 or -errno. */
int mptcp_subflow_refresh(struct mptcp_priv *p, uint64_t netns);

#endif
