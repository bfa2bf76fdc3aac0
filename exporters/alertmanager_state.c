// SPDX-License-Identifier: MIT
/*
 * The push's alerts kept durable: each one held (firing, or resolved and
 * not yet delivered) is a note beside the push's cursor in the store
 * (storage/store_samples.h: store_meta "cursor.alertmanager/alert/<key>"),
 * its labels, annotations, start, end and since when its state waits for
 * Alertmanager, as JSON. The push's thread writes the notes of what changed
 * before each POST and deletes a note once its resolve is delivered; at
 * start the notes come back (am_export_attach()) and are sent at once, with
 * their first startsAt: Alertmanager knows an alert by its labels, so a
 * firing it already has is not a second one, and a firing or a resolve it
 * never got, because the agent was killed during an outage, is not lost.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "exporters/alertmanager_internal.h"
#include "storage/store_samples.h"

#define AM_CURSOR   "alertmanager"
#define AM_NOTE	    "alert/"
#define AM_NOTE_MAX (sizeof(AM_NOTE) + sizeof(((struct alert *)0)->key))

/* One note to write (text) or delete (text NULL). */
struct am_note {
	char what[AM_NOTE_MAX];
	char *text;
	bool gone;
	bool failed;
};

static char *alert_note_text(const struct alert *al)
{
	json_t *o = json_pack("{sOsOsIsIsI}", "labels", al->labels, "annotations", al->annotations,
			      "starts_ns", (json_int_t)al->starts_ns, "ends_ns",
			      (json_int_t)al->ends_ns, "pending_ns", (json_int_t)al->pending_ns);
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;

	json_decref(o);
	return text;
}

/* The changed alerts' notes (s.mu held), their dirty marks cleared. */
static struct am_note *notes_take(struct am_export *am, size_t *n)
{
	struct am_note *w = calloc(am->n ? am->n : 1, sizeof(*w));

	*n = 0;
	for (size_t i = 0; w && i < am->n; i++) {
		struct alert *al = &am->alerts[i];
		struct am_note *nt = &w[*n];

		if (!al->dirty)
			continue;
		snprintf(nt->what, sizeof(nt->what), AM_NOTE "%s", al->key);
		nt->gone = al->gone;
		nt->text = al->gone ? NULL : alert_note_text(al);
		if (!al->gone && !nt->text)
			continue; /* out of memory: stays dirty */
		al->dirty = false;
		(*n)++;
	}
	return w;
}

/* After the writes (s.mu held): a failed one is tried again at the next
 * turn; a delivered resolve whose note is deleted is forgotten. */
static void notes_done(struct am_export *am, const struct am_note *w, size_t n)
{
	for (size_t k = 0; k < n; k++)
		for (size_t i = 0; i < am->n; i++) {
			struct alert *al = &am->alerts[i];

			if (strcmp(al->key, w[k].what + strlen(AM_NOTE)))
				continue;
			if (w[k].failed)
				al->dirty = true;
			else if (w[k].gone && al->gone && !al->dirty)
				am_alert_drop(am, i);
			break;
		}
}

void am_state_save(struct am_export *am)
{
	struct am_note *w;
	size_t n;

	pthread_mutex_lock(&am->s.mu);
	if (!am->cur) {
		/* kept in memory only: a delivered resolve is forgotten now */
		for (size_t i = am->n; i-- > 0;)
			if (am->alerts[i].gone)
				am_alert_drop(am, i);
		pthread_mutex_unlock(&am->s.mu);
		return;
	}
	w = notes_take(am, &n);
	pthread_mutex_unlock(&am->s.mu);
	for (size_t k = 0; w && k < n; k++) {
		int err = store_cursor_note_set(am->cur, w[k].what, w[k].text);

		w[k].failed = err != 0;
		if (err)
			log_ratelimited(&am->rl_store, 60000, LOG_LVL_WARN, AM_SECTION_OWN,
					"cannot store the state of alert %s (%s); it is kept in "
					"memory and stored at the next turn",
					w[k].what + strlen(AM_NOTE), strerror(-err));
		free(w[k].text);
	}
	pthread_mutex_lock(&am->s.mu);
	if (w)
		notes_done(am, w, n);
	pthread_mutex_unlock(&am->s.mu);
	free(w);
}

/* One note back into the table (before the thread and the collectors
 * start); a note that does not parse is logged and left. */
static int note_load(const char *what, const char *text, void *arg)
{
	struct am_export *am = arg;
	const char *key = what + strlen(AM_NOTE);
	json_t *o = json_loads(text, 0, NULL), *l = NULL, *a = NULL;
	json_int_t starts = 0, ends = 0, pending = 0;
	struct alert *na;

	/* "o": borrowed references, taken only once the whole note parsed */
	if (!o ||
	    json_unpack(o, "{sososIsIsI}", "labels", &l, "annotations", &a, "starts_ns", &starts,
			"ends_ns", &ends, "pending_ns", &pending) ||
	    !json_is_object(l) || !json_is_object(a) || strlen(key) >= sizeof(na->key)) {
		log_warn(AM_SECTION_OWN, "the stored state of alert %s does not parse; ignored",
			 key);
		json_decref(o);
		return 0;
	}
	na = realloc(am->alerts, (am->n + 1) * sizeof(*na));
	if (!na) {
		json_decref(o);
		return -ENOMEM;
	}
	am->alerts = na;
	na = &am->alerts[am->n++];
	*na = (struct alert){.labels = json_incref(l),
			     .annotations = json_incref(a),
			     .starts_ns = starts,
			     .ends_ns = ends,
			     .pending_ns = pending,
			     .changed = pending != 0,
			     .due = INT64_MIN,
			     .version = 1};
	snprintf(na->key, sizeof(na->key), "%s", key);
	am->stats.firing += !ends;
	json_decref(o);
	return 0;
}

int am_export_attach(struct am_export *am, struct store *s)
{
	char err[256];
	int rc;

	if (!am)
		return 0;
	am->cur = store_cursor_open(s, AM_CURSOR, err, sizeof(err));
	if (!am->cur) {
		log_err(AM_SECTION_OWN, "cannot open its cursor: %s", err);
		return -EIO;
	}
	rc = store_cursor_notes(am->cur, AM_NOTE, note_load, am);
	if (rc) {
		log_err(AM_SECTION_OWN, "cannot read the alerts it held: %s", strerror(-rc));
		return rc;
	}
	am_status_backlog(am);
	if (am->n)
		log_info(AM_SECTION_OWN,
			 "%zu alert(s) held before the restart, sent again with their first "
			 "startsAt",
			 am->n);
	return 0;
}
