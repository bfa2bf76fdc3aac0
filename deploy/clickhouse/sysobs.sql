-- ClickHouse tables of sysobsd's event exporter ([export.NAME] format =
-- clickhouse), made by sysobsd --print-clickhouse-ddl from the event
-- table descriptors: docs/fleet.md.
CREATE DATABASE IF NOT EXISTS sysobs;

-- self_samples: the agent's own CPU, memory, fds, threads and queue depth over time
CREATE TABLE IF NOT EXISTS sysobs.self_samples
(
    host String,
    job String,
    labels Nested(name String, value String),
    db_id String,
    id UInt64,
    ts Int64,
    time DateTime MATERIALIZED toDateTime(intDiv(ts, 1000000000)),
    cpu_seconds Float64,
    rss_bytes Int64,
    open_fds Int64,
    threads Int64,
    queue_depth Int64
)
ENGINE = ReplacingMergeTree()
PARTITION BY toYYYYMM(time)
ORDER BY (host, time, db_id, id);

-- cachefiles_slow: on-demand requests slower than slow_threshold
CREATE TABLE IF NOT EXISTS sysobs.cachefiles_slow
(
    host String,
    job String,
    labels Nested(name String, value String),
    db_id String,
    id UInt64,
    ts Int64,
    time DateTime MATERIALIZED toDateTime(intDiv(ts, 1000000000)),
    op String,
    volume String,
    object_id Int32,
    object_debug_id UInt32,
    offset Int64,
    length Int64,
    latency_seconds Float64,
    result Int32,
    pid UInt32,
    comm String,
    kworker UInt8
)
ENGINE = ReplacingMergeTree()
PARTITION BY toYYYYMM(time)
ORDER BY (host, time, db_id, id);

-- cachefiles_daemon: on-demand daemon deaths, restores (failover) and cache flushes
CREATE TABLE IF NOT EXISTS sysobs.cachefiles_daemon
(
    host String,
    job String,
    labels Nested(name String, value String),
    db_id String,
    id UInt64,
    ts Int64,
    time DateTime MATERIALIZED toDateTime(intDiv(ts, 1000000000)),
    event String,
    pid UInt32,
    comm String,
    inflight Int64
)
ENGINE = ReplacingMergeTree()
PARTITION BY toYYYYMM(time)
ORDER BY (host, time, db_id, id);

-- drop_samples: sampled drop records with 5-tuple, device, netns and kernel location
CREATE TABLE IF NOT EXISTS sysobs.drop_samples
(
    host String,
    job String,
    labels Nested(name String, value String),
    db_id String,
    id UInt64,
    ts Int64,
    time DateTime MATERIALIZED toDateTime(intDiv(ts, 1000000000)),
    reason Nullable(String),
    reason_code UInt32,
    location Nullable(String),
    ifindex Nullable(Int32),
    ifname Nullable(String),
    netns UInt32,
    netns_name Nullable(String),
    l3 Nullable(String),
    protocol Nullable(String),
    saddr Nullable(String),
    daddr Nullable(String),
    sport Nullable(Int32),
    dport Nullable(Int32),
    icmp_type Nullable(Int16),
    icmp_code Nullable(Int16),
    tcp_flags Nullable(Int16),
    len UInt32,
    cpu UInt32,
    truncated Nullable(UInt8),
    fragment Nullable(UInt8),
    cgroup_id Nullable(UInt64),
    cgroup Nullable(String),
    container Nullable(String),
    netns_cookie Nullable(UInt64),
    stack Nullable(String),
    capture Nullable(String),
    orig_len Nullable(UInt32),
    pod Nullable(String),
    pod_namespace Nullable(String),
    pod_uid Nullable(String),
    container_name Nullable(String)
)
ENGINE = ReplacingMergeTree()
PARTITION BY toYYYYMM(time)
ORDER BY (host, time, db_id, id);

-- mptcp_events: every path-manager event: connections, subflows, addresses, resets
CREATE TABLE IF NOT EXISTS sysobs.mptcp_events
(
    host String,
    job String,
    labels Nested(name String, value String),
    db_id String,
    id UInt64,
    ts Int64,
    time DateTime MATERIALIZED toDateTime(intDiv(ts, 1000000000)),
    netns UInt32,
    netns_name Nullable(String),
    type String,
    token Nullable(Int64),
    family Nullable(Int64),
    saddr Nullable(String),
    daddr Nullable(String),
    sport Nullable(Int64),
    dport Nullable(Int64),
    loc_id Nullable(Int64),
    rem_id Nullable(Int64),
    backup Nullable(Int64),
    error Nullable(Int64),
    flags Nullable(Int64),
    timeout Nullable(Int64),
    if_idx Nullable(Int64),
    reset_reason Nullable(Int64),
    reset_flags Nullable(Int64),
    server_side Nullable(Int64),
    unknown_attrs Nullable(String),
    reset_reason_name Nullable(String),
    deny_join_id0 Nullable(Int64),
    pod Nullable(String),
    pod_namespace Nullable(String),
    pod_uid Nullable(String)
)
ENGINE = ReplacingMergeTree()
PARTITION BY toYYYYMM(time)
ORDER BY (host, time, db_id, id);

-- mptcp_subflow_samples: periodic TCP state of the subflows of long-lived MPTCP connections (tcp_info)
CREATE TABLE IF NOT EXISTS sysobs.mptcp_subflow_samples
(
    host String,
    job String,
    labels Nested(name String, value String),
    db_id String,
    id UInt64,
    ts Int64,
    time DateTime MATERIALIZED toDateTime(intDiv(ts, 1000000000)),
    netns UInt32,
    netns_name Nullable(String),
    token Nullable(Int64),
    loc_id Nullable(Int64),
    rem_id Nullable(Int64),
    saddr Nullable(String),
    daddr Nullable(String),
    sport Nullable(Int64),
    dport Nullable(Int64),
    backup Nullable(Int64),
    rtt_us Nullable(Int64),
    rttvar_us Nullable(Int64),
    min_rtt_us Nullable(Int64),
    snd_cwnd Nullable(Int64),
    snd_ssthresh Nullable(Int64),
    retrans Nullable(Int64),
    total_retrans Nullable(Int64),
    lost Nullable(Int64),
    bytes_sent Nullable(Int64),
    bytes_acked Nullable(Int64),
    bytes_received Nullable(Int64),
    bytes_retrans Nullable(Int64),
    delivery_rate Nullable(Int64),
    pacing_rate Nullable(Int64),
    busy_us Nullable(Int64),
    rwnd_limited_us Nullable(Int64),
    sndbuf_limited_us Nullable(Int64),
    pod Nullable(String),
    pod_namespace Nullable(String),
    pod_uid Nullable(String)
)
ENGINE = ReplacingMergeTree()
PARTITION BY toYYYYMM(time)
ORDER BY (host, time, db_id, id);

-- ifs_scans: every scan result with its decoded status
CREATE TABLE IF NOT EXISTS sysobs.ifs_scans
(
    host String,
    job String,
    labels Nested(name String, value String),
    db_id String,
    id UInt64,
    ts Int64,
    time DateTime MATERIALIZED toDateTime(intDiv(ts, 1000000000)),
    duration_ns Nullable(Int64),
    device Nullable(String),
    test Nullable(String),
    cpu Nullable(Int32),
    core Nullable(Int32),
    package Nullable(Int32),
    status Nullable(String),
    details Nullable(String),
    error_code Nullable(Int32),
    error_name Nullable(String),
    retryable Nullable(Int32),
    chunk_num Nullable(Int32),
    chunk_stop_index Nullable(Int32),
    image_version Nullable(String),
    batch Nullable(Int32),
    requested_by Nullable(String),
    scan_id Nullable(Int64),
    reason Nullable(String),
    control_error Nullable(Int32),
    signature_error Nullable(Int32),
    array_bitmask Nullable(Int64),
    array_bank Nullable(Int32),
    ctrl_result Nullable(Int32),
    bundle_idx Nullable(Int32),
    pgm_idx Nullable(Int32),
    sbaf_status Nullable(Int32),
    test_fail Nullable(Int32),
    error_file Nullable(String),
    write_errno Nullable(Int32),
    reloaded Nullable(Int32)
)
ENGINE = ReplacingMergeTree()
PARTITION BY toYYYYMM(time)
ORDER BY (host, time, db_id, id);
