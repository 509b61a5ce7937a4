"""The block-device safety core on real loop devices: every refusal leaves the device
byte-for-byte unchanged, and a claim holds it exclusively until released."""

from __future__ import annotations

import os
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from fiolake.errors import DeviceRefused
from fiolake.runner.host import blockinfo, device
from tests.runner.loopdev import held_exclusively, loop_device, mounted, requires_loop, sha256

pytestmark = requires_loop


def refused(dev: Path, given: str | None = None, **options: object) -> str:
    """claim() must refuse; the device's bytes are unchanged; the message."""
    before = sha256(dev)
    with pytest.raises(DeviceRefused) as caught:
        device.claim(given or str(dev), **{"destroy_data": True, **options})  # type: ignore[arg-type]
    assert sha256(dev) == before
    return str(caught.value)


def test_a_free_loop_device_is_claimed_exclusively_and_described(tmp_path: Path) -> None:
    with loop_device(tmp_path / "disk.img") as dev:
        with device.claim(str(dev), destroy_data=True) as held:
            assert held.identity.size_bytes == 64 * 2**20
            assert held.identity.model == f"loop: {tmp_path / 'disk.img'}"
            assert held.identity.serial is None and held.identity.logical_block_bytes == 512
            with pytest.raises(OSError):  # nobody else gets it exclusively meanwhile
                os.close(os.open(dev, os.O_RDONLY | os.O_EXCL))
        os.close(os.open(dev, os.O_RDONLY | os.O_EXCL))  # released


def test_missing_destroy_data(tmp_path: Path) -> None:
    with loop_device(tmp_path / "disk.img") as dev:
        assert refused(dev, destroy_data=False) == (
            f"--device {dev}: fio will overwrite every byte of it — pass --destroy-data to "
            "confirm that it holds nothing you need"
        )


def test_a_regular_file_and_a_symlink_to_one(tmp_path: Path) -> None:
    plain = tmp_path / "plain.img"
    plain.write_bytes(b"x" * 4096)
    link = tmp_path / "link"
    link.symlink_to(plain)
    for given, shown in ((plain, f"{plain}"), (link, f"{link} (-> {plain})")):
        with pytest.raises(DeviceRefused) as caught:
            device.claim(str(given), destroy_data=True)
        assert str(caught.value) == (
            f"--device {shown} is a regular file, not a block device — give a block device "
            "such as /dev/nvme0n1 (to benchmark a file system, use --dir)"
        )
    assert plain.read_bytes() == b"x" * 4096


def test_a_mounted_device(tmp_path: Path) -> None:
    # Read-only: a read-write ext4 mount lets the kernel write the device itself (its
    # journal, the lazy inode-table init), and `refused` checks every byte is unchanged.
    with (
        loop_device(tmp_path / "disk.img") as dev,
        mounted(dev, tmp_path / "mnt", read_only=True) as where,
    ):
        assert refused(dev) == (
            f"--device {dev}: it is mounted on {where} — unmount it first (umount {where}), "
            "or choose another device"
        )


def test_a_device_whose_partition_is_mounted(tmp_path: Path) -> None:
    with loop_device(tmp_path / "disk.img", partitions=True) as dev:
        with mounted(Path(f"{dev}p1"), tmp_path / "mnt", read_only=True) as where:
            assert refused(dev) == (
                f"--device {dev}: its partition {dev}p1 is mounted on {where} — unmount it "
                f"first (umount {where}), or choose another device"
            )


def test_a_partition_table_is_a_signature(tmp_path: Path) -> None:
    with loop_device(tmp_path / "disk.img", partitions=True) as dev:
        assert refused(dev) == (
            f"--device {dev} holds dos at 0x1fe (wipefs -n {dev}) — if that data may go, "
            "pass --wipe-signatures as well, or choose another device"
        )


def test_ext4_is_refused_without_wipe_signatures_and_wiped_with_it(tmp_path: Path) -> None:
    with loop_device(tmp_path / "disk.img") as dev:
        subprocess.run(["mkfs.ext4", "-q", str(dev)], check=True)
        assert refused(dev) == (
            f"--device {dev} holds ext4 at 0x438 (wipefs -n {dev}) — if that data may go, "
            "pass --wipe-signatures as well, or choose another device"
        )
        with device.claim(str(dev), destroy_data=True, wipe_signatures=True) as held:
            assert held.found == ["ext4 at 0x438"] and device.signatures(dev) == held.found
            assert held.erase_signatures() == ["ext4 at 0x438"]
            assert device.signatures(dev) == []


def test_held_open_exclusively_by_another_process(tmp_path: Path) -> None:
    with loop_device(tmp_path / "disk.img") as dev, held_exclusively(dev):
        assert refused(dev) == (
            f"--device {dev} is open exclusively by another program (a mount, mkfs, another "
            f"fiolake…) — find it with `fuser -v {dev}` or lsblk and stop it, or choose "
            "another device"
        )


def test_identity_mismatch_says_what_was_found(tmp_path: Path) -> None:
    with loop_device(tmp_path / "disk.img") as dev:
        assert refused(dev, expect={"serial": "S4EWNX0R123456"}) == (
            f"--device {dev} has serial unknown, expected S4EWNX0R123456 — device names can "
            "move after a reboot: check `lsblk -o NAME,MODEL,SERIAL,WWN` and give the right "
            "device (or /dev/disk/by-id/…)"
        )
        model = f"loop: {tmp_path / 'disk.img'}"
        assert f"has model {model}, expected nvme" in refused(dev, expect={"model": "nvme"})
        with device.claim(str(dev), destroy_data=True, expect={"model": model}):
            pass


def test_a_device_holding_a_protected_path(tmp_path: Path) -> None:
    """The lake (or spool) on the device: refused as holding it, even when the check of
    mounts is not what catches it first — here the lake is under the mount."""
    with loop_device(tmp_path / "disk.img") as dev, mounted(dev, tmp_path / "mnt") as where:
        names = blockinfo.with_partitions(blockinfo.sys_dir(dev))
        assert blockinfo.backing_devices(where) == names
        with pytest.raises(DeviceRefused, match="holds .*/mnt — fiolake will not write over"):
            device._check_not_backing(dev, names, [where], Path("/sys"))


def test_expect_device_syntax() -> None:
    assert device.parse_expect(["serial=A1", "wwn=eui.1"]) == {"serial": "A1", "wwn": "eui.1"}
    with pytest.raises(DeviceRefused) as caught:
        device.parse_expect(["size=1"])
    assert str(caught.value) == (
        "--expect-device 'size=1' is not KEY=VALUE with KEY one of serial, wwn, model — e.g. "
        "--expect-device serial=S4EWNX0R123456"
    )


def test_purge_discards_or_zero_fills_the_whole_device(tmp_path: Path) -> None:
    with loop_device(tmp_path / "disk.img") as dev:
        with device.claim(str(dev), destroy_data=True) as held:
            assert held.purge() == "discard"  # loop devices support discard
            assert dev.read_bytes() == bytes(64 * 2**20)  # a discarded loop block reads 0
        with dev.open("r+b") as f:
            f.write(b"x" * 2**20)
        with device.claim(str(dev), destroy_data=True) as held:
            assert held.purge(discard=False) == "zero-fill"
            assert dev.read_bytes() == bytes(64 * 2**20)


def test_a_masked_sys_dev_block_is_found_through_sys_class_block(tmp_path: Path) -> None:
    """podman masks /sys/dev/block in a container: the device is found by its dev file,
    and its size read from the device itself when sysfs does not show it."""
    with loop_device(tmp_path / "disk.img") as dev:
        number = blockinfo.dev_number(blockinfo.sys_dir(dev))
        fake = tmp_path / "sys"
        (fake / "class/block" / dev.name).mkdir(parents=True)
        (fake / "class/block" / dev.name / "dev").write_text(number + "\n")
        assert blockinfo.sys_dir(dev, fake) == fake / "class/block" / dev.name
        assert blockinfo.identity(dev, fake).size_bytes == 64 * 2**20


def test_a_read_only_device(tmp_path: Path) -> None:
    with loop_device(tmp_path / "disk.img") as dev:
        subprocess.run(["blockdev", "--setro", str(dev)], check=True)
        try:
            assert refused(dev) == (
                f"--device {dev} is read-only (blockdev --getro {dev}) — make it writable "
                f"(blockdev --setrw {dev}), or choose another device"
            )
        finally:
            subprocess.run(["blockdev", "--setrw", str(dev)], check=True)


def test_purge_refuses_a_device_of_unknown_size(tmp_path: Path) -> None:
    # No device here has an unknown size (sysfs, then a seek to its end, always give one):
    # the decision is tested with the size it is given, and on a claim whose identity says
    # none, the device's bytes are unchanged.
    for size in (None, 0):
        with pytest.raises(DeviceRefused) as caught:
            device.whole_size(Path("/dev/sdz"), size, "--purge")
        assert str(caught.value) == (
            "--purge /dev/sdz: the device's size is unknown (neither sysfs nor a seek to its "
            "end gives one) — --purge covers the whole device, so fiolake must know its size: "
            "check `blockdev --getsize64 /dev/sdz`, or drop --purge"
        )
    assert device.whole_size(Path("/dev/sdz"), 4096, "--prefill") == 4096
    with (
        loop_device(tmp_path / "disk.img") as dev,
        device.claim(str(dev), destroy_data=True) as held,
    ):
        before = sha256(dev)
        held.identity = replace(held.identity, size_bytes=None)  # as if the kernel said nothing
        with pytest.raises(DeviceRefused, match=r"^--purge .*: the device's size is unknown"):
            held.purge()
        assert sha256(dev) == before
