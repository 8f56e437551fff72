import { useLocation } from 'preact-iso';
import { withQuery } from './url.ts';

/** One field of a list's filters, named as the URL and the API name it. */
export interface FilterField {
  name: string;
  label: string;
  /** The choices of a select, besides "any"; without them the field is an input. */
  options?: readonly string[];
  type?: 'text' | 'datetime-local';
  placeholder?: string;
}

/**
 * One filter, labelled: a select when it has options, else an input; `value` is what the URL holds.
 * The URL's value is the field's initial one, not a bound one: a page that re-renders while its list
 * loads keeps what is being typed, and a new URL (the control is keyed by its value) starts afresh.
 */
function FilterControl({ field, value }: { field: FilterField; value: string }) {
  if (field.options) {
    return (
      <label>
        {field.label}
        <select name={field.name}>
          {['', ...field.options].map((option) => (
            <option key={option} value={option} selected={option === value}>
              {option || 'any'}
            </option>
          ))}
        </select>
      </label>
    );
  }
  return (
    <label>
      {field.label}
      {/* Preact types an input by its `type`, one union each; both kinds here take these attributes. */}
      <input name={field.name} type={(field.type ?? 'text') as 'text'} defaultValue={value} placeholder={field.placeholder} />
    </label>
  );
}

/**
 * The filters of a list page. They live in the URL: submitting writes them there (empty ones
 * left out) and goes back to the first page; Clear goes to the page without them.
 */
export function FilterForm({ label, fields }: { label: string; fields: readonly FilterField[] }) {
  const { query, path, route } = useLocation();
  const submit = (event: Event) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    const changes: Record<string, string | undefined> = { cursor: undefined };
    for (const { name } of fields) changes[name] = String(form.get(name) ?? '').trim() || undefined;
    route(withQuery(path, query, changes));
  };
  return (
    <form class="filters" onSubmit={submit} aria-label={label}>
      {fields.map((field) => (
        <FilterControl key={`${field.name}=${query[field.name] ?? ''}`} field={field} value={query[field.name] ?? ''} />
      ))}
      <button type="submit">Filter</button>
      <a href={path}>Clear</a>
    </form>
  );
}

/**
 * The filters the URL holds, for the API: empty ones left out, and a choice that is not one of
 * its field's options dropped rather than sent to be refused.
 */
export function filterValues<F extends readonly FilterField[]>(
  query: Record<string, string>,
  fields: F,
): Partial<Record<F[number]['name'], string>> {
  const values: Record<string, string> = {};
  for (const { name, options } of fields) {
    const value = query[name];
    if (value && (!options || options.includes(value))) values[name] = value;
  }
  return values as Partial<Record<F[number]['name'], string>>;
}
