// SQLite's write-ahead log needs shared memory on one host: the data folder must not be on a network filesystem.

const NETWORK_FS = /^(nfs\d*|cifs|smb\d*|smbfs|fuse(\..*)?|9p|afs|ceph|glusterfs|lustre|sshfs|davfs)$/;

/**
 * Returns the filesystem type of `dir` if it is a network (or FUSE) filesystem, read from
 * `/proc/self/mountinfo` text. SQLite's WAL needs shared memory on one host, so such a data
 * folder corrupts silently under concurrent access.
 */
export function detectNetworkFilesystem(mountinfo: string, dir: string): string | undefined {
  let best: { mountPoint: string; fsType: string } | undefined;
  for (const line of mountinfo.split('\n')) {
    const fields = line.split(' ');
    const separator = fields.indexOf('-');
    if (separator < 0 || fields.length < separator + 2) continue;
    const mountPoint = (fields[4] ?? '').replace(/\\040/g, ' ');
    const fsType = fields[separator + 1] ?? '';
    const inside = dir === mountPoint || dir.startsWith(mountPoint.endsWith('/') ? mountPoint : `${mountPoint}/`);
    if (inside && (!best || mountPoint.length >= best.mountPoint.length)) best = { mountPoint, fsType };
  }
  return best && NETWORK_FS.test(best.fsType) ? best.fsType : undefined;
}
