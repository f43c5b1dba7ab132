# Sourced by the benchmarks that load the stack with iperf3 through a veth
# pair into a private namespace (calibration.sh, timer_sampling.sh). The
# caller removes what these make (ip link del, ip netns del, kill) in its
# own traps, which are set before it calls them.

# veth_up NS HOST_IF PEER_IF NET: namespace NS and a veth pair, HOST_IF at
# NET.1/30 on the host and PEER_IF at NET.2/30 in NS, both up.
veth_up() {
  ip netns add "$1"
  ip link add "$2" type veth peer name "$3"
  ip link set "$3" netns "$1"
  ip addr add "$4.1/30" dev "$2"
  ip link set "$2" up
  ip -n "$1" addr add "$4.2/30" dev "$3"
  ip -n "$1" link set "$3" up
  ip -n "$1" link set lo up
}

# iperf3_server NS CPU PORT OUT: a one-client iperf3 server in NS pinned to
# CPU, its output in OUT, in the background ($! is its pid); returns once
# it listens (or after 5 s).
iperf3_server() {
  ip netns exec "$1" taskset -c "$2" iperf3 -s -1 -p "$3" >"$4" 2>&1 &
  local _
  for _ in $(seq 50); do
    ip netns exec "$1" ss -ltn "sport = :$3" | grep -q LISTEN && return 0
    sleep 0.1
  done
}
