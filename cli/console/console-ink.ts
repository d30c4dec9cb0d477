// Ink and the React it renders with: the console's terminal UI alone needs them, and Ink's layout
// engine loads with a top-level await, which a CommonJS bundle cannot hold. So they are their own
// ES module (dist/console-ink.mjs), loaded when `cotal console` starts (cli/console/console-ui.ts), and
// every other command neither reads nor compiles them.
export { Box, render, Text, useApp, useInput, useStdout } from "ink";
export { createElement, useEffect, useState } from "react";
