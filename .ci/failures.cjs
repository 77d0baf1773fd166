// The closing lines of a CI log: "N passed, N failed, N skipped" over both legs, then each failed
// test with the head of its error, so the failure is still readable when only the log's end is kept.
const fs = require("node:fs");
const reports = process.argv.slice(2).map((file) => {
  try {
    return { file, json: JSON.parse(fs.readFileSync(file, "utf8")) };
  } catch {
    return { file, json: { numPassedTests: 0, numFailedTests: 0, numPendingTests: 0, testResults: [] } };
  }
});
const sum = (key) => reports.reduce((n, r) => n + (r.json[key] ?? 0), 0);
console.log(`${sum("numPassedTests")} passed, ${sum("numFailedTests")} failed, ${sum("numPendingTests")} skipped`);
for (const { file, json } of reports) {
  for (const suite of json.testResults ?? []) {
    const failed = (suite.assertionResults ?? []).filter((t) => t.status === "failed");
    // A file can fail outside any test (an import error, a hook): its message is on the suite.
    if (failed.length === 0 && suite.status === "failed" && suite.message) {
      console.log(`FAILED ${suite.name} (${file})\n${head(suite.message)}`);
    }
    for (const t of failed) {
      console.log(`FAILED ${suite.name} > ${t.fullName} (${file})\n${head((t.failureMessages ?? []).join("\n"))}`);
    }
  }
}
function head(text) {
  return text
    .split("\n")
    .slice(0, 12)
    .map((line) => `    ${line}`)
    .join("\n");
}
