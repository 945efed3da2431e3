package dev.stagehand.tape;

import java.util.List;

/**
 * The library's fixed resources.
 *
 * @param name      library name (volumes name their library in the catalog)
 * @param drives    drive names
 * @param accessors number of robot accessors: at most this many cartridge moves are under way at once
 */
public record LibraryLayout(String name, List<String> drives, int accessors) {}
