import { healthInWords } from './health-words.ts';
import type { TestDefinition } from './tests-api.ts';

/** The test's health (TRIAGE-11): in words, with its score and the runs that are the evidence. */
export function HealthPanel({ test }: { test: TestDefinition }) {
  const { health } = test;
  return (
    <section class="panel" aria-labelledby="health-heading">
      <h2 id="health-heading">Health</h2>
      <p class="health-words">
        <strong>{healthInWords(health)}</strong> · score {health.flakyScore.toFixed(2)}
      </p>
      {health.evidence && health.evidence.runs.length > 0 ? (
        <ul class="health-evidence" aria-label="Evidence runs">
          {health.evidence.runs.map((run, at) => (
            <li key={run.runId}>
              <a href={`/runs/${run.runId}`}>Run {at + 1}</a>
              {run.jobId ? (
                <>
                  {' '}
                  in <a href={`/jobs/${run.jobId}`}>its job</a>
                </>
              ) : null}
            </li>
          ))}
        </ul>
      ) : null}
    </section>
  );
}
