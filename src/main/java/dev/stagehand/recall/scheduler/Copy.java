package dev.stagehand.recall.scheduler;

/** A tape copy of a file: the volume it is on and its offset there. */
public record Copy(String volume, long offsetBytes) {}
