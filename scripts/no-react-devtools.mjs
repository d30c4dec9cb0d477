// Stands in for react-devtools-core in the bundles: Ink loads it only when DEV=true, and
// `cotal console` never runs under React DevTools.
export default { initialize() {}, connectToDevTools() {} };
