export function App() {
  return <main>تركس</main>;
}
