package dev.stagehand.transfer;

import java.util.List;

/**
 * One destination link as the mover sees it.
 *
 * @param link          scheme and host list, e.g. {@code ftp://a:2811,b:2811}
 * @param concurrency   current number of concurrent transfers (adaptive between min and max)
 * @param queued        files waiting
 * @param active        files being sent
 * @param mbPerSecond   smoothed throughput (EMA)
 * @param successRate   share of recent attempts that succeeded
 * @param hostsOut      hosts currently out of rotation after failures
 */
public record LinkStatus(String link, int concurrency, int queued, int active, double mbPerSecond,
                         double successRate, List<String> hostsOut) {}
