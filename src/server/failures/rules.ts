/**
 * Category rules (TRIAGE-3): the ordered rules of Allure's `categories.json`, which name a group
 * before anyone triages it. Pure: checking a rule set, and finding the first rule a failure matches.
 */

import { RE2JS } from 're2js';
import { LIMITS } from './normalise.ts';

export type RuleStatus = 'failed' | 'broken';
export type RuleDefectType = 'product_bug' | 'automation_bug' | 'system_issue' | 'no_defect' | 'to_investigate';

export interface FailureRule {
  name: string;
  messageRegex?: string;
  traceRegex?: string;
  matchedStatuses?: RuleStatus[];
  defectType?: RuleDefectType;
}

/** What a rule is matched against: the error as reported (bounded), and the verdict of what failed. */
export interface RuleSubject {
  message: string;
  /** The trace, when known; a rule with a trace regex matches no failure without one. */
  trace: string | null;
  status: RuleStatus;
}

/** The longest regex a rule may carry. */
export const RULE_REGEX_CHARS = 1000;

/** A problem with one regex of a rule set: where it is (`/rules/2/messageRegex`) and what is wrong. */
export interface RuleProblem {
  index: number;
  field: 'messageRegex' | 'traceRegex';
  message: string;
}

const compiled = new Map<string, RE2JS>();

/**
 * The regex as it matches, compiled by RE2 (re2js), whose matching takes time linear in the text
 * whatever the pattern: no rule can hang the server. Matched against the whole text (`testExact`),
 * `.` matching line ends too, as Allure matches the whole message (DOTALL). Throws when RE2 cannot
 * compile it (backreferences and lookaround are not RE2 syntax).
 */
function regexOf(source: string): RE2JS {
  let regex = compiled.get(source);
  if (!regex) {
    regex = RE2JS.compile(source, RE2JS.DOTALL);
    // A rule set holds at most 100 rules of two regexes: the cache stays small unless rules churn.
    if (compiled.size > 1000) compiled.clear();
    compiled.set(source, regex);
  }
  return regex;
}

/** The problems of a rule set's regexes: too long, or not RE2 syntax (RE2 matches in linear time, so nothing else is refused). */
export function ruleProblems(rules: readonly FailureRule[]): RuleProblem[] {
  const problems: RuleProblem[] = [];
  rules.forEach((rule, index) => {
    for (const field of ['messageRegex', 'traceRegex'] as const) {
      const source = rule[field];
      if (source === undefined) continue;
      if (source.length > RULE_REGEX_CHARS) {
        problems.push({ index, field, message: `is longer than ${RULE_REGEX_CHARS} characters` });
        continue;
      }
      try {
        regexOf(source);
      } catch (error) {
        const reason = (error as Error).message.replace(/^error parsing regexp: /, '');
        problems.push({
          index,
          field,
          message: `is not RE2 syntax, which rules require (no backreferences or lookaround; see https://github.com/google/re2/wiki/Syntax): ${reason}`,
        });
      }
    }
  });
  return problems;
}

/** The first rule the failure matches, or undefined. The rules must have passed `ruleProblems`. */
export function firstMatchingRule(rules: readonly FailureRule[], subject: RuleSubject): FailureRule | undefined {
  const message = subject.message.slice(0, LIMITS.messageChars);
  const trace = subject.trace === null ? null : subject.trace.slice(0, LIMITS.traceHeadChars);
  return rules.find((rule) => {
    if (rule.matchedStatuses !== undefined && !rule.matchedStatuses.includes(subject.status)) return false;
    if (rule.messageRegex !== undefined && !regexOf(rule.messageRegex).testExact(message)) return false;
    if (rule.traceRegex !== undefined && (trace === null || !regexOf(rule.traceRegex).testExact(trace))) return false;
    return true;
  });
}
