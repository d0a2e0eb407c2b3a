/** The registrant contact a domain purchase's question is answered with (what a person types on the form). */
export const ADA_REGISTRANT = {
  name: "Ada Lovelace",
  email: "ada@example.com",
  address: "1 Analytical Way",
  city: "London",
  postalCode: "N1 9GU",
  country: "gb",
  phone: "+44 20 7123 4567",
};
