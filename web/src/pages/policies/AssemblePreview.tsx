import { useMutation } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { api, unwrap } from '../../api/client.ts';
import { goalPlaceholders } from '../../lib/placeholders.ts';
import { Badge } from '../../ui/Badge.tsx';
import { Field } from '../../ui/Field.tsx';
import { ProblemAlert } from '../../ui/states.tsx';
import type { Policy } from './policy-query.ts';

const REASONS = {
  always: 'always',
  condition_true: 'condition true',
  condition_false: 'condition false',
  over_budget: 'over the token budget',
} as const;

/** The variables a version declares and the `{{placeholders}}` its sections use, each once. */
function variablesOf(policy: Policy): string[] {
  const declared = Object.keys(policy.content.variables ?? {});
  const used = policy.content.sections.flatMap((section) => goalPlaceholders(section.text));
  return [...new Set([...declared, ...used])];
}

/**
 * Renders the shown version for variables and context, as a dry run (no A/B exposure recorded):
 * the messages, which sections were kept and why, and the tokens.
 */
export function AssemblePreview({ policy }: { policy: Policy }) {
  const names = variablesOf(policy);
  const [values, setValues] = useState<Record<string, string>>({});
  const [context, setContext] = useState('');
  const [contextError, setContextError] = useState<string>();
  const [conversation, setConversation] = useState('');
  const assemble = useMutation({
    mutationFn: (parsedContext: Record<string, unknown> | undefined) =>
      unwrap(
        api.POST('/api/policy/{policy_id}/assemble', {
          params: { path: { policy_id: policy.policy_id } },
          body: {
            version: policy.version,
            dry_run: true,
            variables: Object.fromEntries(Object.entries(values).filter(([, value]) => value !== '')),
            ...(parsedContext ? { context: parsedContext } : {}),
            ...(conversation.trim() ? { conversation_id: conversation.trim() } : {}),
          },
        }),
      ),
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    let parsed: Record<string, unknown> | undefined;
    if (context.trim()) {
      try {
        const value: unknown = JSON.parse(context);
        if (!value || typeof value !== 'object' || Array.isArray(value))
          throw new Error('a JSON object is needed');
        parsed = value as Record<string, unknown>;
      } catch (error) {
        setContextError(`Not a JSON object: ${(error as Error).message}`);
        return;
      }
    }
    setContextError(undefined);
    assemble.mutate(parsed);
  };
  const result = assemble.data;
  return (
    <section className="card" aria-labelledby="policy-assemble">
      <h2 id="policy-assemble">Assemble preview</h2>
      <p className="muted">
        Renders version {policy.version} as an agent would get it. A preview is a dry run: it counts in no A/B
        test.
      </p>
      <form onSubmit={submit}>
        <ProblemAlert error={assemble.error} title="The policy was not assembled" />
        {names.length > 0 && (
          <fieldset className="field">
            <legend>Variables</legend>
            <div className="row">
              {names.map((name) => {
                const declared = policy.content.variables?.[name];
                return (
                  <Field
                    key={name}
                    label={name}
                    operation="assemblePolicy"
                    name={`variables.${name}`}
                    error={assemble.error}
                    hint={
                      declared?.required
                        ? 'required'
                        : declared?.default !== undefined
                          ? `default: ${declared.default}`
                          : declared
                            ? 'optional'
                            : 'not declared: empty when not given'
                    }
                  >
                    {(props) => (
                      <input
                        {...props}
                        required={Boolean(declared?.required)}
                        value={values[name] ?? ''}
                        onChange={(event) =>
                          setValues((current) => ({ ...current, [name]: event.target.value }))
                        }
                      />
                    )}
                  </Field>
                );
              })}
            </div>
          </fieldset>
        )}
        <div className="field">
          <label htmlFor="assemble-context">Context (JSON)</label>
          <textarea
            id="assemble-context"
            className="code"
            rows={3}
            spellCheck={false}
            value={context}
            onChange={(event) => setContext(event.target.value)}
            placeholder='{"tier": "pro"}'
            aria-invalid={Boolean(contextError)}
            aria-describedby={`assemble-context-hint${contextError ? ' assemble-context-error' : ''}`}
          />
          <div className="hint" id="assemble-context-hint">
            Facts the sections' conditions test (context.tier == "pro").
          </div>
          {contextError && (
            <div className="error" id="assemble-context-error">
              {contextError}
            </div>
          )}
        </div>
        <div className="field">
          <label htmlFor="assemble-conversation">Conversation id</label>
          <input
            id="assemble-conversation"
            value={conversation}
            onChange={(event) => setConversation(event.target.value)}
            aria-describedby="assemble-conversation-hint"
          />
          <div className="hint" id="assemble-conversation-hint">
            Optional: the unit an A/B test assigns.
          </div>
        </div>
        <button type="submit" className="primary" disabled={assemble.isPending}>
          Assemble
        </button>
      </form>
      {result && (
        <div>
          <p role="status">
            Assembled version {result.version}: {result.messages.length} message
            {result.messages.length === 1 ? '' : 's'}, {result.tokens.total} tokens.
          </p>
          <h3>Messages</h3>
          <ol className="messages" aria-label="Assembled messages">
            {result.messages.map((message, index) => (
              // biome-ignore lint/suspicious/noArrayIndexKey: messages are in order and have no id
              <li key={index}>
                <div className="muted">{message.role}</div>
                <pre>{message.content}</pre>
              </li>
            ))}
          </ol>
          <p>
            {result.tokens.total} tokens
            {result.tokens.budget !== null ? ` of a budget of ${result.tokens.budget}` : ''}
            {result.tokens.truncated.length > 0
              ? `; left out to fit: ${result.tokens.truncated.join(', ')}`
              : ''}
            .
            {result.experiment &&
              ` Served variant ${result.experiment.variant} of A/B test ${result.experiment.id} for ${result.experiment.unit} ${result.experiment.unit_id}.`}
          </p>
          {result.unresolved_variables.length > 0 && (
            <p className="alert">Rendered empty: {result.unresolved_variables.join(', ')}</p>
          )}
          <div className="table-wrap">
            <table>
              <caption>Sections</caption>
              <thead>
                <tr>
                  <th scope="col">Section</th>
                  <th scope="col">Kind</th>
                  <th scope="col">Role</th>
                  <th scope="col">Included</th>
                  <th scope="col">Tokens</th>
                </tr>
              </thead>
              <tbody>
                {result.sections.map((section) => (
                  <tr key={section.name}>
                    <td>
                      {section.name}
                      {section.static && <span className="muted"> (static)</span>}
                    </td>
                    <td>{section.kind}</td>
                    <td>{section.role}</td>
                    <td>
                      <Badge
                        value={`${section.included ? 'yes' : 'no'}: ${REASONS[section.reason]}`}
                        tone={section.included ? 'ok' : 'neutral'}
                      />
                    </td>
                    <td>{section.tokens}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </div>
      )}
    </section>
  );
}
