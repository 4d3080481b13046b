package netguard

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// TunName is the name of the tun device in the sandbox.
const TunName = "cordon0"

// The sandbox's addresses on the tun device. Nothing answers at them: the
// device is point to point and every destination is routed through it.
var (
	tunAddr4 = &net.IPNet{IP: net.IPv4(10, 88, 0, 2), Mask: net.CIDRMask(30, 32)}
	tunAddr6 = &net.IPNet{IP: net.ParseIP("fdcd::2"), Mask: net.CIDRMask(126, 128)}
)

// Device is what the guard needs of a sandbox's network namespace: its tun
// device, and DNS sockets bound to the loopback addresses a resolver in
// the sandbox may ask (127.0.0.53 of systemd-resolved, 127.0.0.1, ::1),
// which no route to the tun device reaches.
type Device struct {
	Tun *os.File
	// DNS are UDP sockets and TCP listeners on port 53.
	DNS []*os.File
	// Forward are TCP listeners on the loopback addresses and ports the
	// allow list names (127.0.0.1:5432, localhost:3000): what connects
	// there is forwarded to the same address and port of the host.
	Forward []*os.File
	// EndsWithNamespace says the device's network namespace is a
	// sandbox's, which ends with the sandbox: the guard's Close then
	// leaves the device to the kernel, which deletes it with the
	// namespace in the background. Closing the last descriptor of a
	// device that is not persistent unregisters it at once, which waits
	// for RCU grace periods: about 10 ms that the exit of cordon's
	// process waited for, whichever goroutine closed it.
	EndsWithNamespace bool
}

// Close closes every descriptor of d.
func (d *Device) Close() {
	d.Tun.Close()
	d.closeSockets()
}

// closeSockets closes the DNS sockets and loopback listeners of d.
func (d *Device) closeSockets() {
	for _, f := range append(d.DNS, d.Forward...) {
		f.Close()
	}
}

// MakeTun creates the tun device in the calling thread's network
// namespace, which must be the sandbox's (the caller has locked the thread
// and joined it, with CAP_NET_ADMIN over it): it brings lo and the device
// up, gives it the sandbox's addresses and routes every IPv4 and IPv6
// destination through it; then it binds DNS sockets on port 53 of each
// loopback address in dns (one that cannot be bound, as ::1 without IPv6,
// is skipped: DNS there fails, it is not answered by anyone else).
//
// For each address and port in fwd it binds a TCP listener there (see
// Device.Forward); one that cannot be bound is an error, but for ::1 in a
// namespace without IPv6.
func MakeTun(dns []netip.Addr, fwd []netip.AddrPort) (*Device, error) {
	tun, err := makeTun()
	if err != nil {
		return nil, err
	}
	d := &Device{Tun: tun}
	for _, a := range dns {
		if !a.IsLoopback() {
			continue
		}
		ap := netip.AddrPortFrom(a, 53)
		for _, typ := range []int{unix.SOCK_DGRAM, unix.SOCK_STREAM} {
			// One that cannot be bound is skipped (see above).
			if f, err := loopbackSocket(typ, ap); err == nil {
				d.DNS = append(d.DNS, f)
			}
		}
	}
	for _, ap := range fwd {
		f, err := loopbackSocket(unix.SOCK_STREAM, ap)
		if err != nil && ap.Addr().Is6() && errors.Is(err, unix.EADDRNOTAVAIL) {
			// No IPv6 in the sandbox: nothing can connect to ::1.
			continue
		}
		if err != nil {
			d.Close()
			return nil, fmt.Errorf("listen on %s in the sandbox for the allow list: %w", ap, err)
		}
		d.Forward = append(d.Forward, f)
	}
	return d, nil
}

// loopbackSocket binds a UDP socket (SOCK_DGRAM) or a listening TCP
// socket (SOCK_STREAM) to ap in the calling thread's network namespace,
// with plain system calls: the net package's first listener probes the
// host (IPv6, MPTCP, somaxconn) and registers each socket with its poller,
// which was most of the time the sockets took.
func loopbackSocket(typ int, ap netip.AddrPort) (*os.File, error) {
	a := ap.Addr().Unmap()
	family := unix.AF_INET
	var sa unix.Sockaddr
	if a.Is4() {
		sa = &unix.SockaddrInet4{Port: int(ap.Port()), Addr: a.As4()}
	} else {
		family = unix.AF_INET6
		sa = &unix.SockaddrInet6{Port: int(ap.Port()), Addr: a.As16()}
	}
	fd, err := unix.Socket(family, typ|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	if family == unix.AF_INET6 {
		err = unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 1)
	}
	if err == nil && typ == unix.SOCK_STREAM {
		err = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
	}
	if err == nil {
		err = os.NewSyscallError("bind", unix.Bind(fd, sa))
	}
	if err == nil && typ == unix.SOCK_STREAM {
		err = os.NewSyscallError("listen", unix.Listen(fd, unix.SOMAXCONN))
	}
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), ap.String()), nil
}

// LoopbackForwards are the loopback addresses and ports that rules name
// with a port (127.0.0.1:5432, [::1]:8080, localhost:3000, which is both),
// port 53 aside: DNS there is answered by the guard, never forwarded.
func LoopbackForwards(rules []Rule) []netip.AddrPort {
	var out []netip.AddrPort
	add := func(a netip.Addr, port uint16) {
		ap := netip.AddrPortFrom(a, port)
		if !slices.Contains(out, ap) {
			out = append(out, ap)
		}
	}
	for _, r := range rules {
		switch {
		case r.Port == 0 || r.Port == 53:
		case r.Host == "" && r.Addr.IsLoopback():
			add(r.Addr, r.Port)
		case r.Host == "localhost" && !r.Wildcard:
			add(netip.MustParseAddr("127.0.0.1"), r.Port)
			add(netip.IPv6Loopback(), r.Port)
		}
	}
	return out
}

// LoopbackResolvers are the loopback addresses a resolver in the sandbox
// may ask: the loopback nameservers of resolvConf (the host's, which the
// sandbox sees), and 127.0.0.1 and ::1, where glibc asks without one.
func LoopbackResolvers(resolvConf string) []netip.Addr {
	out := []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback()}
	data, _ := os.ReadFile(resolvConf)
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "nameserver" {
			continue
		}
		a, err := netip.ParseAddr(f[1])
		if err == nil && a.Unmap().IsLoopback() && !slices.Contains(out, a.Unmap()) {
			out = append(out, a.Unmap())
		}
	}
	return out
}

func makeTun() (*os.File, error) {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open /dev/net/tun: %w", err)
	}
	tun := os.NewFile(uintptr(fd), "/dev/net/tun")
	ifr, err := unix.NewIfreq(TunName)
	if err == nil {
		ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
		err = unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr)
	}
	if err != nil {
		tun.Close()
		return nil, fmt.Errorf("create tun device %s: %w", TunName, err)
	}
	if err := configure(); err != nil {
		tun.Close()
		return nil, err
	}
	return tun, nil
}

func configure() error {
	h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("netlink: %w", err)
	}
	defer h.Close()
	// The links by index (an ioctl), not by name: netlink's answer for a
	// name is every attribute of the link, which took longer to read
	// than the set-up it is for.
	loIdx, err := ifIndex("lo")
	if err == nil {
		err = h.LinkSetUp(&netlink.Dummy{LinkAttrs: netlink.LinkAttrs{Index: loIdx, Name: "lo"}})
	}
	if err != nil {
		return fmt.Errorf("bring lo up: %w", err)
	}
	idx, err := ifIndex(TunName)
	if err != nil {
		return fmt.Errorf("find %s: %w", TunName, err)
	}
	link := &netlink.Tuntap{LinkAttrs: netlink.LinkAttrs{Index: idx, Name: TunName}}
	if err := h.LinkSetMTU(link, MTU); err != nil {
		return fmt.Errorf("set the MTU of %s: %w", TunName, err)
	}
	if err := h.AddrAdd(link, &netlink.Addr{IPNet: tunAddr4}); err != nil {
		return fmt.Errorf("address %s: %w", tunAddr4, err)
	}
	v6 := h.AddrAdd(link, &netlink.Addr{IPNet: tunAddr6, Flags: unix.IFA_F_NODAD})
	if err := h.LinkSetUp(link); err != nil {
		return fmt.Errorf("bring %s up: %w", TunName, err)
	}
	if err := h.RouteAdd(&netlink.Route{LinkIndex: idx, Scope: netlink.SCOPE_LINK, Dst: &net.IPNet{IP: net.IPv4zero, Mask: net.CIDRMask(0, 32)}}); err != nil {
		return fmt.Errorf("IPv4 default route: %w", err)
	}
	if v6 == nil {
		// Without IPv6 in the sandbox (disabled by sysctl) there is
		// nothing to route: IPv6 connections fail as unreachable.
		if err := h.RouteAdd(&netlink.Route{LinkIndex: idx, Dst: &net.IPNet{IP: net.IPv6zero, Mask: net.CIDRMask(0, 128)}}); err != nil {
			return fmt.Errorf("IPv6 default route: %w", err)
		}
	}
	return nil
}

// ifIndex returns the index of the calling thread's network namespace's
// link name.
func ifIndex(name string) (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, os.NewSyscallError("socket", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq(name)
	if err == nil {
		err = unix.IoctlIfreq(fd, unix.SIOCGIFINDEX, ifr)
	}
	if err != nil {
		return 0, err
	}
	return int(ifr.Uint32()), nil
}
