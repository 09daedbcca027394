package kit

import (
	"fmt"
	"strings"
)

// ReferenceNetplan is the benchmarks' reference change (a bridge with two ports, static
// IPv4 and IPv6 on four interfaces, ten routes) as one netplan document: the netplan
// backend's policy, plain `netplan apply`'s file and the naive generate + reload + up's.
func ReferenceNetplan() string {
	var routes strings.Builder
	for i := 0; i < 10; i++ {
		fmt.Fprintf(&routes, "        - {to: 172.16.%d.0/24, via: 10.0.3.254}\n", i)
	}
	return `network:
  version: 2
  renderer: NetworkManager
  ethernets:
    eth1: {}
    eth2: {}
    eth3:
      addresses: [10.0.3.1/24, "fd00:3::1/64"]
      routes:
` + routes.String() + `    eth4: {addresses: [10.0.4.1/24, "fd00:4::1/64"]}
    eth5: {addresses: [10.0.5.1/24, "fd00:5::1/64"]}
  bridges:
    br0:
      interfaces: [eth1, eth2]
      parameters: {stp: false}
      addresses: [10.0.0.1/24, "fd00:0::1/64"]
`
}
