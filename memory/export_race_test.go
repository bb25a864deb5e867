package memory

// RaceEnabled exports raceEnabled to the external test package.
const RaceEnabled = raceEnabled
