/** Manager: spawns, supervises and fences seats. */
export {};
