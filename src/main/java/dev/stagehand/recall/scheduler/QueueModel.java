package dev.stagehand.recall.scheduler;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

/**
 * What is wanted from tape: files (deduplicated across requests), requests, and one queue per volume with
 * incremental aggregates. Pure bookkeeping, no I/O and no clock; the engine and the policies read it.
 */
public final class QueueModel {

    /**
     * A requested file as submitted (before dedup). {@code targetedMetadata}: what the request addressed to
     * this site for the file (a JSON object, WLCG targetedMetadata) or null.
     */
    public record FileSpec(long id, String name, long sizeBytes, List<Copy> copies, String experiment,
                           String dataset, String adler32, String targetedMetadata) {

        public FileSpec(long id, String name, long sizeBytes, List<Copy> copies, String experiment, String dataset,
                        String adler32) {
            this(id, name, sizeBytes, copies, experiment, dataset, adler32, null);
        }
    }

    final Map<Long, FileWork> files = new HashMap<>();
    final Map<String, RequestWork> requests = new HashMap<>();
    final Map<String, VolumeQueue> volumes = new HashMap<>();
    /** Volumes with something queued. */
    final Map<String, VolumeQueue> nonEmpty = new HashMap<>();
    /** Volumes the library reported unavailable: no file is queued or read there until restored. */
    final java.util.Set<String> unavailable = new java.util.HashSet<>();
    /** Queued multi-copy files by every volume they have a copy on, to move them to a mounted copy. */
    final Map<String, Map<Long, FileWork>> alternates = new HashMap<>();

    public Collection<VolumeQueue> queues() { return nonEmpty.values(); }
    public VolumeQueue queue(String volume) { return volumes.get(volume); }
    public RequestWork request(String id) { return requests.get(id); }
    public FileWork file(long id) { return files.get(id); }
    public Collection<RequestWork> requests() { return requests.values(); }
    public int queuedFiles() {
        int n = 0;
        for (VolumeQueue q : nonEmpty.values()) n += q.fileCount();
        return n;
    }

    /**
     * Adds a request. A file already on disk counts as done at once; a file queued or being read for another
     * request is joined, not read again. {@code preferred} says which volumes are mounted (read there first).
     */
    public RequestWork addRequest(String id, double arrival, int priority, String experiment, List<FileSpec> specs,
                                  Predicate<String> preferred) {
        return addRequest(id, arrival, priority, experiment, specs, false, preferred);
    }

    /**
     * Adds a request of which {@code specs} is the first slice; {@code more}: further slices follow through
     * {@link #addFiles}, and until the last has come the request neither ends nor counts as completed by any
     * one volume (it is not known to be short).
     */
    public RequestWork addRequest(String id, double arrival, int priority, String experiment, List<FileSpec> specs,
                                  boolean more, Predicate<String> preferred) {
        if (requests.containsKey(id)) throw new IllegalArgumentException("request " + id + " already queued");
        RequestWork r = new RequestWork(id, arrival, priority, experiment);
        r.intakePending = more;
        requests.put(id, r);
        add(r, specs, preferred);
        if (r.finished()) r.completedAt = arrival;
        return r;
    }

    /**
     * The next slice of a request added with more to come: its files join the request as if they had come with
     * it (same arrival, its priority now). {@code more}: still more follow. Returns the files added; the request
     * may end now ({@link RequestWork#finished}) if this was its last slice and nothing of it is left to read.
     */
    public List<FileWork> addFiles(String id, List<FileSpec> specs, boolean more, double now, Predicate<String> preferred) {
        RequestWork r = requests.get(id);
        if (r == null || !r.intakePending) throw new IllegalArgumentException("request " + id + " takes no more files");
        int from = r.files.size();
        add(r, specs, preferred); // still pending meanwhile: no volume was counted as completing it
        r.resetBytes();
        if (!more) {
            r.intakePending = false;
            moveCompletable(null, r.completesOn());
            if (r.finished()) r.completedAt = now;
        }
        return r.files.subList(from, r.files.size());
    }

    private void add(RequestWork r, List<FileSpec> specs, Predicate<String> preferred) {
        double arrival = r.arrival;
        int priority = r.priority;
        for (FileSpec s : specs) {
            FileWork f = files.get(s.id());
            boolean fresh = f == null;
            if (f == null) {
                f = new FileWork(s.id(), s.name(), s.sizeBytes(), s.copies(), s.experiment(), s.dataset(), s.adler32());
                f.firstArrival = arrival;
                files.put(f.id, f);
            } else if (f.requests.contains(r)) {
                // the same file twice in one request; asked of the file's few requests, not of the request's
                // files: that scan made a second request for the files of a 10^6-file one quadratic
                continue;
            }
            // one read serves every request: the tape system sees the first metadata addressed to it
            if (f.targetedMetadata == null) f.targetedMetadata = s.targetedMetadata();
            if ((fresh || f.state == FileWork.State.FAILED) && unavailable.containsAll(f.volumes())) {
                // every copy is on a volume the library reported unavailable: fail now, with the reason
                f.state = FileWork.State.FAILED;
                f.error = "no usable tape copy: volume unavailable";
                r.files.add(f);
                f.requests.add(r);
                r.failedFiles++;
                continue;
            }
            r.files.add(f);
            switch (f.state) {
                case ON_DISK -> { f.requests.add(r); continue; }
                case FAILED -> { // asked again: try again from scratch
                    f.state = FileWork.State.QUEUED;
                    f.failedVolumes = null;
                    f.error = null;
                    f.requests.removeIf(RequestWork::finished);
                    f.firstArrival = arrival;
                    f.priority = Integer.MIN_VALUE;
                    f.requests.add(r);
                    r.remaining++;
                    raisePriority(f, priority);
                    enqueue(f, preferred);
                    continue;
                }
                default -> { }
            }
            f.requests.add(r);
            r.remaining++;
            if (f.state == FileWork.State.CLAIMED) r.claimedPerVolume.merge(f.home.volume(), 1, Integer::sum);
            if (f.state == FileWork.State.QUEUED && f.home != null) {
                raisePriority(f, priority);
                incQueued(r, f.home.volume());
            } else if (f.state == FileWork.State.QUEUED) {
                raisePriority(f, priority);
                enqueue(f, preferred);
            }
        }
    }

    private void raisePriority(FileWork f, int p) {
        if (p <= f.priority) return;
        int old = f.priority;
        f.priority = p;
        if (f.home != null && f.state == FileWork.State.QUEUED) volumes.get(f.home.volume()).reprioritise(f, old, p);
    }

    boolean usable(FileWork f, Copy c) {
        return f.usable(c) && !unavailable.contains(c.volume());
    }

    /**
     * The volume cannot be mounted: it takes no more work until {@link #volumeAvailable}. Its queued files
     * move to other copies or fail; returns the requests that ended (with failed files).
     */
    public List<RequestWork> volumeUnavailable(String volume, String reason, double now, Predicate<String> mounted) {
        unavailable.add(volume);
        List<RequestWork> ended = new ArrayList<>();
        VolumeQueue q = volumes.get(volume);
        if (q != null) {
            for (FileWork f : new ArrayList<>(q.files.values())) ended.addAll(copyFailed(f, volume, reason, now, mounted));
        }
        return ended;
    }

    /** The volume is usable again (an operator restored it). */
    public void volumeAvailable(String volume) {
        unavailable.remove(volume);
    }

    public java.util.Set<String> unavailableVolumes() {
        return java.util.Set.copyOf(unavailable);
    }

    /**
     * A request's priority changed: its queued files take the highest priority among the open requests
     * that want them (raised or lowered), so the volume ranking sees it at once.
     */
    public void changePriority(String requestId, int priority) {
        RequestWork r = requests.get(requestId);
        if (r == null || r.priority == priority) return;
        r.priority = priority;
        for (FileWork f : r.files) {
            int p = Integer.MIN_VALUE;
            for (RequestWork o : f.requests) if (!o.finished()) p = Math.max(p, o.priority);
            if (p == Integer.MIN_VALUE || p == f.priority) continue;
            int old = f.priority;
            f.priority = p;
            if (f.home != null && f.state == FileWork.State.QUEUED) volumes.get(f.home.volume()).reprioritise(f, old, p);
        }
    }

    /** Puts a queued file on its best usable copy: a mounted one, else the one with most queued bytes. */
    void enqueue(FileWork f, Predicate<String> mounted) {
        unclaim(f);
        Copy best = null;
        long bestBytes = -1;
        for (Copy c : f.copies) {
            if (!usable(f, c)) continue;
            if (mounted.test(c.volume())) { best = c; break; }
            VolumeQueue q = volumes.get(c.volume());
            long b = q == null ? 0 : q.bytes;
            if (b > bestBytes) { bestBytes = b; best = c; }
        }
        if (best == null) throw new IllegalStateException("no usable copy of " + f.name);
        f.home = best;
        f.state = FileWork.State.QUEUED;
        VolumeQueue q = volumes.computeIfAbsent(best.volume(), VolumeQueue::new);
        q.add(f);
        nonEmpty.put(q.label, q);
        for (RequestWork r : f.requests) if (!r.finished()) incQueued(r, best.volume());
        if (f.copies.size() > 1) {
            for (Copy c : f.copies) alternates.computeIfAbsent(c.volume(), k -> new HashMap<>()).put(f.id, f);
        }
    }

    private void dequeue(FileWork f) {
        String v = f.home.volume();
        VolumeQueue q = volumes.get(v);
        q.remove(f);
        if (q.isEmpty()) nonEmpty.remove(v);
        for (RequestWork r : f.requests) if (!r.finished()) decQueued(r, v);
        if (f.copies.size() > 1) {
            for (Copy c : f.copies) {
                Map<Long, FileWork> m = alternates.get(c.volume());
                if (m != null) m.remove(f.id);
            }
        }
    }

    /** A volume got mounted: its multi-copy files queued elsewhere move here (read the mounted copy). */
    public void preferMounted(String volume, Predicate<String> mounted) {
        Map<Long, FileWork> m = alternates.get(volume);
        if (m == null || m.isEmpty()) return;
        for (FileWork f : new ArrayList<>(m.values())) {
            if (f.state != FileWork.State.QUEUED || f.home.volume().equals(volume) || mounted.test(f.home.volume())) continue;
            Copy c = null;
            for (Copy x : f.copies) if (x.volume().equals(volume) && usable(f, x)) c = x;
            if (c == null) continue;
            dequeue(f);
            f.home = c;
            VolumeQueue q = volumes.computeIfAbsent(volume, VolumeQueue::new);
            q.add(f);
            nonEmpty.put(volume, q);
            for (RequestWork r : f.requests) if (!r.finished()) incQueued(r, volume);
            for (Copy x : f.copies) alternates.computeIfAbsent(x.volume(), k -> new HashMap<>()).put(f.id, f);
        }
    }

    /** Takes queued files off their volume queue: they are about to be read (state CLAIMED). */
    public void claim(FileWork f) {
        if (f.state != FileWork.State.QUEUED) throw new IllegalStateException(f.name + " is " + f.state);
        dequeue(f);
        f.state = FileWork.State.CLAIMED;
        for (RequestWork r : f.requests) if (!r.finished()) r.claimedPerVolume.merge(f.home.volume(), 1, Integer::sum);
    }

    /** A claimed file leaves that state: its requests stop waiting for its volume on its account. */
    private void unclaim(FileWork f) {
        if (f.state != FileWork.State.CLAIMED || f.home == null) return;
        for (RequestWork r : f.requests) {
            r.claimedPerVolume.computeIfPresent(f.home.volume(), (v, n) -> n > 1 ? n - 1 : null);
        }
    }

    /** Another scheduler instance claimed it: it leaves our queue; its outcome arrives through the store. */
    public void claimedElsewhere(FileWork f) {
        claim(f);
    }

    /** A claimed file goes back to the queue (read cancelled, drive failed), on its best remaining copy. */
    public void requeue(FileWork f, Predicate<String> mounted) {
        if (f.state != FileWork.State.CLAIMED) return;
        if (!wanted(f)) {
            // its requests were cancelled while it was read: nobody is served by reading it again (a new
            // request for it starts from scratch)
            unclaim(f);
            f.state = FileWork.State.FAILED; // out of every queue; its release leaves no error behind
            f.error = null;
            files.remove(f.id);
            return;
        }
        enqueue(f, mounted);
    }

    /**
     * Drops a request the scheduler no longer serves (cancelled, or finished by another instance). Its
     * queued files that no other open request wants leave the queue.
     */
    public void forget(String requestId) {
        RequestWork r = requests.remove(requestId);
        if (r == null) return;
        for (FileWork f : r.files) {
            f.requests.remove(r);
            if (f.state != FileWork.State.QUEUED || r.finished()) continue;
            decQueued(r, f.home.volume());
            if (!wanted(f)) {
                dequeue(f);
                files.remove(f.id);
            }
        }
        r.intakePending = false; // no more slices: it is gone
        r.remaining = 0;
    }

    /**
     * Some files of an open request were cancelled (the rest still wanted): the request stops waiting for them,
     * and those no other open request wants leave the queue. Returns the cancelled files being read (claimed)
     * that no open request wants any more: their reads may stop. The request ends if nothing else was left.
     */
    public List<FileWork> forgetFiles(String requestId, java.util.Set<Long> ids, double now) {
        RequestWork r = requests.get(requestId);
        List<FileWork> unwanted = new ArrayList<>();
        if (r == null || r.finished()) return unwanted;
        for (var it = r.files.iterator(); it.hasNext(); ) {
            FileWork f = it.next();
            if (!ids.contains(f.id)) continue;
            it.remove();
            if (f.state == FileWork.State.QUEUED) {
                decQueued(r, f.home.volume());
                r.remaining--;
            } else if (f.state == FileWork.State.CLAIMED) {
                r.claimedPerVolume.computeIfPresent(f.home.volume(), (v, n) -> n > 1 ? n - 1 : null);
                r.remaining--;
            }
            f.requests.remove(r);
            if (wanted(f)) continue;
            if (f.state == FileWork.State.QUEUED) {
                dequeue(f);
                files.remove(f.id);
            } else if (f.state == FileWork.State.CLAIMED) {
                unwanted.add(f);
            }
        }
        r.resetBytes();
        if (r.finished()) r.completedAt = now;
        return unwanted;
    }

    /** Whether an open request still waits for the file. */
    static boolean wanted(FileWork f) {
        for (RequestWork o : f.requests) if (!o.finished()) return true;
        return false;
    }

    /**
     * Drops the ended requests, and the files no open request wants that are done with (on disk or failed).
     * A service's engine would otherwise hold every request and file it ever served. Only where the disk cache
     * answers for staged files (a file asked for again is looked up there before it reaches the engine): in a
     * simulation this memory is the cache. Returns how many requests were dropped.
     */
    public int forgetEnded() {
        int n = 0;
        for (var it = requests.values().iterator(); it.hasNext(); ) {
            RequestWork r = it.next();
            if (!r.finished()) continue;
            it.remove();
            n++;
            for (FileWork f : r.files) f.requests.remove(r);
        }
        files.values().removeIf(f -> (f.state == FileWork.State.ON_DISK || f.state == FileWork.State.FAILED)
                && f.requests.stream().allMatch(RequestWork::finished));
        return n;
    }

    /** The file is on disk: returns the requests this completed. */
    public List<RequestWork> onDisk(FileWork f, double now) {
        unclaim(f);
        if (f.state == FileWork.State.QUEUED) dequeue(f);
        f.state = FileWork.State.ON_DISK;
        return finishFile(f, now, false);
    }

    /**
     * A copy of the file failed on {@code volume}: it is queued on another copy if there is one (returns an
     * empty list), otherwise it fails and the requests this ended are returned.
     */
    public List<RequestWork> copyFailed(FileWork f, String volume, String reason, double now, Predicate<String> mounted) {
        f.markFailedOn(volume);
        f.error = reason;
        for (Copy c : f.copies) {
            if (usable(f, c)) {
                if (f.state == FileWork.State.QUEUED) dequeue(f);
                enqueue(f, mounted);
                return List.of();
            }
        }
        return fail(f, reason, now);
    }

    /** The file cannot be staged at all. */
    public List<RequestWork> fail(FileWork f, String reason, double now) {
        unclaim(f);
        if (f.state == FileWork.State.QUEUED) dequeue(f);
        f.state = FileWork.State.FAILED;
        f.error = reason;
        return finishFile(f, now, true);
    }

    private List<RequestWork> finishFile(FileWork f, double now, boolean failed) {
        List<RequestWork> done = new ArrayList<>(1);
        for (RequestWork r : f.requests) {
            if (r.finished()) continue;
            if (failed) r.failedFiles++;
            if (--r.remaining == 0 && !r.intakePending) {
                r.completedAt = now;
                done.add(r);
            }
        }
        return done;
    }

    private void incQueued(RequestWork r, String vol) {
        String before = r.completesOn();
        r.queuedPerVolume.merge(vol, 1, Integer::sum);
        moveCompletable(before, r.completesOn());
    }

    private void decQueued(RequestWork r, String vol) {
        Integer c = r.queuedPerVolume.get(vol);
        if (c == null) return;
        if (c > 1) { r.queuedPerVolume.put(vol, c - 1); return; }
        String before = r.completesOn();
        r.queuedPerVolume.remove(vol);
        moveCompletable(before, r.completesOn());
    }

    /** A request's completing volume changed from {@code from} to {@code to} (either null: none). */
    private void moveCompletable(String from, String to) {
        if (java.util.Objects.equals(from, to)) return;
        if (from != null) volumes.get(from).completable--;
        if (to != null) volumes.get(to).completable++;
    }
}
