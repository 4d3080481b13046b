package netguard

import (
	"fmt"
	"net"
	"os"

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

// MakeTun creates the tun device in the calling thread's network
// namespace, which must be the sandbox's (the caller has locked the thread
// and joined it, with CAP_NET_ADMIN over it): it brings lo and the device
// up, gives it the sandbox's addresses and routes every IPv4 and IPv6
// destination through it. It returns the device's descriptor.
func MakeTun() (*os.File, error) {
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
	lo, err := h.LinkByName("lo")
	if err == nil {
		err = h.LinkSetUp(lo)
	}
	if err != nil {
		return fmt.Errorf("bring lo up: %w", err)
	}
	link, err := h.LinkByName(TunName)
	if err != nil {
		return fmt.Errorf("find %s: %w", TunName, err)
	}
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
	idx := link.Attrs().Index
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
